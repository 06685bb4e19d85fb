// sluice-logd: receives syslog messages from many senders (TCP and Unix
// stream sockets, net::server) and appends each as one line to a log file,
// with sluice-log's rotation and fsync (a file_worker and its writable).
// Backpressure runs end to end: while the file's writable is past its
// high-water mark every connection is paused, so the kernel's buffers fill
// and TCP holds the senders back. RELP senders (--listen-relp) are answered
// per message once its write's callback came, so an answer never comes
// before the file has the message (on disk, with --fsync ack). TLS senders
// (--listen-tls, RFC 5425) are read as --listen's, from the tls::socket's
// plaintext, once their handshake (and certificate) passed. With --forward
// it is a relay: the output is a RELP writable to the next hop instead of
// FILE (logd/relay_output.h), so a RELP sender's answer comes with the next
// hop's. With --threads N, N loops read, each with its own writable on
// FILE's one worker.
#include <fcntl.h>
#include <getopt.h>
#include <sys/stat.h>
#include <malloc.h>
#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "tool.h"
#include "args.h"
#include "compress_problems.h"
#include "logd_stats.h"
#include "metrics_server.h"
#include "logd/line_escape.h"
#include "logd/loop_counts.h"
#include "logd/other_loop.h"
#include "logd/relay_output.h"
#include "rate_limited_note.h"
#include "shutdown_signals.h"
#include "socket_perms.h"
#include "systemd.h"
#include "tls_server_args.h"
#include "sluice/sluice.h"
#include "sluice/syslog/relp_session.h"

namespace {

constexpr const char* usage_text = R"(usage: sluice-logd --listen ADDR [--listen ADDR]... [OPTION]... FILE
       sluice-logd --listen-relp HOST:PORT [--listen-relp HOST:PORT]... [OPTION]... FILE
       sluice-logd --listen-tls HOST:PORT... --tls-cert FILE --tls-key FILE [--tls-client-ca FILE] [OPTION]... FILE
       sluice-logd --listen-relp HOST:PORT... --forward relp://HOST:PORT [--forward ...]... [OPTION]...
       sluice-logd --listen-relp HOST:PORT... --forward kafka://BROKER[,BROKER...]/TOPIC [-X KEY=VALUE]... [OPTION]...
Receives syslog messages over TCP and Unix stream sockets, and over RELP,
and appends each as one line to FILE, rotating it by size, like rsyslog's
imptcp, imrelp and omfile. HOST:PORT takes [::1]:PORT for IPv6. A time T is
a whole number with ms, s, m or h, up to 24h; a bare number is seconds (as in
sluice-fanout and sluice-log).

Options:
  --listen ADDR     where to accept senders, once or more: HOST:PORT (an IP
                    address or localhost; port 0 picks a free port),
                    unix:PATH, or fd:NAME (sockets systemd passed, see
                    systemd). Each address is printed on standard error as
                    'sluice-logd: listening on ADDR' once it listens.
  --listen-relp HOST:PORT
                    where to accept RELP senders (rsyslog's omrelp,
                    sluice::relp_writable), once or more, beside --listen;
                    printed as 'sluice-logd: listening on HOST:PORT (RELP)'.
                    Each message is answered (rsp 200) only once it is
                    written to FILE as --fsync has it: with --fsync ack,
                    once it is on disk. See RELP.
  --listen-tls HOST:PORT
                    where to accept syslog over TLS (RFC 5425: octet-counted
                    frames; rsyslog's omfwd with a stream driver,
                    sluice-log syslog+tls://), once or more, beside --listen;
                    needs --tls-cert and --tls-key; printed as
                    'sluice-logd: listening on HOST:PORT (TLS)'. A sender
                    whose handshake fails is cut off before anything it
                    sent is written, said on standard error with the reason.
                    The handshake must be done within 10 s (or
                    --idle-timeout, when shorter), else it fails.
  --tls-cert FILE   the server's certificate (PEM; any intermediate ones
                    after it), for --listen-tls
  --tls-key FILE    its private key (PEM); a warning if group or others may
                    read it
  --tls-client-ca FILE
                    require each --listen-tls sender to present a
                    certificate that chains to a CA in FILE (PEM); one
                    without, or with another, is refused
  --framing MODE    auto (the default): each connection's first byte tells,
                    a digit for octet counting (RFC 6587 'LEN SP MSG'), '<'
                    for LF framing; octet: octet counting only; lf: LF only
  --max-message SIZE
                    the longest message written whole (default 64K, as
                    sluice-log's --max-message); a longer one is written
                    cut to SIZE bytes, its rest skipped up to the end its
                    frame gives (the octet count or the LF), and the
                    connection goes on; counted as truncated, and said on
                    standard error (at most once every 10 s, with a count).
                    No connection holds more than SIZE bytes of a message.
  --max-size SIZE   rotate FILE before a message that would take it past
                    SIZE bytes (K, M or G suffixes, 1024-based; 0, the
                    default: never), as sluice-log does
  --keep N          rotated files to keep (default 5); with --compress it
                    counts the compressed ones
  --compress METHOD gzip or zstd: rotated files become FILE.N.gz or
                    FILE.N.zst, compressed by a background thread, so that
                    a rotation does not hold the writes up (FILE itself
                    stays plain), as sluice-log's --compress. none, the
                    default: rotated files stay as they are. METHOD:LEVEL
                    sets the level (gzip:1-9, zstd:1-22). Needs --max-size
                    and a --keep above 0 (else bad usage). A rotated file
                    that cannot be compressed stays plain, is said (at
                    most once every 10 s), counted in --stats and tried
                    again; the start keeps a plain FILE.N beside a FILE.N.gz
                    that is not its whole copy (as sluice-log's --compress)
  --fsync POLICY    never, end, bytes=SIZE or ms=T, as sluice-log's --fsync;
                    or ack: FILE is synced after each batch of messages
                    written (all that came, from every connection, while
                    the last batch was written and synced: a group
                    commit), and only then are that batch's RELP messages
                    answered, so that an answer means "on disk"
  --on-full ACTION  when FILE's disk is full (ENOSPC, EDQUOT): wait (the
                    default): nothing more is read, so that TCP holds the
                    senders back and nothing accepted is lost; said once on
                    standard error; the write is tried again every second
                    and at SIGHUP, and goes on when there is room. exit: the
                    messages not yet written are lost, counted and said
                    ('K of N messages not written'), exit status 1.
  --grace T         after SIGTERM or SIGINT, wait at most T (e.g. 5s, 500ms,
                    2m; 0: not at all) for FILE to take what was read;
                    default: no limit. A second SIGTERM or SIGINT ends the
                    wait at once. See Signals.
  --max-connections N
                    at most N connections at a time on each --listen
                    address; one past it is closed at once (counted as
                    refused). On --listen-tls N counts the senders whose
                    handshake is done, and at most N more connections may
                    be in their handshake besides: one more cuts off the
                    oldest of them (a failed handshake, 'too many
                    connections in their handshake'), so that connections
                    that never finish a handshake cannot lock a sender
                    out. One whose handshake ends while N senders are in
                    is closed then (counted as refused).
  --idle-timeout T  close a connection that sent nothing for T (e.g. 10m,
                    30s, 500ms; default: never); a connection paused because
                    FILE is behind is not idle. Counted as idle closed; with
                    --stats each is also said ('PEER: idle for T; closing
                    the connection'). A frame it had begun is lost.
  --stats           print each connection's counts when it closes
                    ('sluice-logd: PEER: N messages, B bytes') and the totals
                    at exit ('sluice-logd: N messages, B bytes, C
                    connections, M malformed, R rotations, H reopens; W
                    written, L not written; T truncated, I idle closed, F
                    refused, E accept errors, S waits for space; Y fsyncs,
                    A RELP answered'; N = W + L; with --compress also
                    '; C compressed, F failed compressions')
  --json            with --stats: each as one JSON object
  --metrics HOST:PORT
                    serve the totals of --stats, and gauges of what is now
                    (connections open, bytes waiting for FILE), as
                    Prometheus metrics: 'GET /metrics' on HOST:PORT (port 0:
                    any free one), printed as 'sluice-logd: serving metrics
                    on http://HOST:PORT/metrics'. Read-only; a request over
                    8K or not whole within 10 s is closed (counted). An
                    address that cannot be listened on (a port in use) is
                    bad usage. See docs/tools.md, Metrics.
  --threads N       N event loops (default 1), each on its own thread,
                    reading its own connections, all writing through
                    FILE's one writer thread, each message whole. Each
                    loop listens on every --listen and --listen-relp
                    HOST:PORT (SO_REUSEPORT; the kernel spreads the
                    connections by a hash of their addresses); a unix:
                    or fd:NAME address, and every --listen-tls one, is
                    accepted by the first loop, which hands its
                    connections to the loops in turn (a TLS handshake is
                    done on the loop that gets it). Printed as
                    'sluice-logd: N threads listening' once all listen.
                    Counts (--stats, --metrics) are the loops' sums;
                    --max-connections holds for each loop. A relay
                    (--forward relp://) runs a RELP session to the next
                    hop from each loop, and a sender is answered by the
                    loop that read it; with --forward kafka:// or --spool
                    it is bad usage
  --socket-mode MODE
                    the permissions of each unix: socket, in octal (0 to
                    777, e.g. 660), set before it accepts; by default the
                    umask's (a connect needs write permission)
  --socket-group GROUP
                    the group of each unix: socket, a name or a number (the
                    process must be root or a member of it)
  -h, --help        show this help

Relay (--forward, instead of FILE): each message goes on to the next hop
over RELP (or into a Kafka topic) as it was received (not escaped), and a
RELP sender's message is answered only once the next hop answered it; so
through any number of relays, the first sender's answer means the last
receiver has it (on its disk when that one runs --fsync ack). A relay
killed loses nothing that was answered: its senders send the unanswered
rest again. --listen and --listen-tls senders are forwarded too, but get no
answers (a relay killed may lose what they sent). FILE's options (--fsync,
--max-size, --keep, --compress, --on-full) do not go with it. See
docs/shipping.md.
  --forward relp://HOST:PORT
                    the next hop (sluice-logd --listen-relp, rsyslog's
                    imrelp); given more than once, the next ones are tried
                    in turn while one cannot be reached (its connect fails
                    or it does not open the session). relp+tls://HOST:PORT:
                    over TLS, the hop's certificate verified (every
                    --forward the same scheme)
  --forward kafka://BROKER[,BROKER...]/TOPIC
                    a Kafka topic instead (one --forward): a message is
                    answered once the brokers' delivery report says it is
                    written (acks=all, enable.idempotence=true); its key,
                    and so its partition, is its syslog HOSTNAME, or the
                    sender's address when it has none, so one host's
                    messages stay in order. One the brokers refuse (above
                    message.max.bytes, invalid) is answered 'rsp 500 next
                    hop refused it: ...' and counted; brokers away hold the
                    senders back, retried without end (--give-up-after T:
                    librdkafka's message.timeout.ms)
  -X KEY=VALUE      a librdkafka setting for --forward kafka://, after the
                    defaults above (so it may change them)
  --forward-tls-ca FILE
                    the CA certificates (PEM) the next hop's certificate
                    must chain to; default: the system's store
  --forward-tls-name NAME
                    the name its certificate must carry; default: HOST
  --forward-tls-cert FILE, --forward-tls-key FILE
                    this relay's certificate (PEM) and key, for a next hop
                    that requires one (imrelp's tls.authMode="certvalid")
  --window N        the most messages sent to the next hop and not yet
                    answered (default 1024, as sluice-log's); N more wait
                    in memory, and past that the senders are not read
                    (backpressure). After a reconnect up to N are sent
                    again: the most the next hop may store twice.
  --give-up-after T once messages have waited T for a session with a next
                    hop: the relay gives up, its senders are cut off (RELP
                    senders send their unanswered messages again elsewhere
                    or later), 'K of N messages not written', exit 1.
                    Default: wait as long as it takes (the senders held
                    back).
  --spool DIR       a durable spool in front of the next hop, as
                    sluice-log's --spool: a message is answered once it is
                    in a segment file in DIR and fsynced (not once the next
                    hop has it), and is sent on from there; what the next
                    hop has not answered when the relay stops or dies is
                    sent first by the next relay on DIR. Lets senders go on
                    while the next hop is away. With --grace, a relay still
                    waiting for its next hop at the end of it exits 1
                    leaving the rest in DIR (said).
  --spool-max SIZE  the most the spool holds on disk (default 1G, at least
                    64K); when full, the senders are held back
  With --stats the totals add 'F forwarded, S resent, R reconnects, D
  refused by the next hop' (and the spool's counts, as sluice-log's);
  there 'written' counts the messages the next hop answered (with
  --spool: the messages in the spool).

Lines: each message is written as one line. So that a line is always one
message, shows no control character to a terminal, and the escaping can be
undone: a backslash is written '\\', LF '\n', CR '\r', TAB '\t', and every
other byte below 0x20 and DEL (0x7f) as '\xHH' (two lowercase hex digits);
all other bytes (UTF-8 too) as they are. An octet-counted message's one
trailing LF is dropped, as rsyslog does (a sender that ends its frames with
LF).

RELP: a session must begin with 'open' (answered with relp_version=0 and
commands=syslog), then 'syslog' transactions numbered one past the one
before, then 'close' (answered once every message before it is, then the
connection is closed). A message is answered once its write is done: with
--fsync ack after the fsync of its batch, with never or the others once
the kernel has it (a crash of the machine may then lose what an fsync had
not reached). Garbage, a wrong transaction number, a frame over the
maximum (128K, or --max-message if larger), no 'open' first or a command
other than syslog closes that connection with the reason on standard
error; what was answered before is in FILE, and the sender sends the
unanswered rest again. A message longer than --max-message is cut as on
--listen. At SIGTERM every message read is written and answered, then each
RELP sender gets 'serverclose' (it reconnects elsewhere or later, sending
what was not answered again).

A malformed frame (a bad length, a first byte that is neither a digit nor
'<') closes that connection, with the reason on standard error; the
messages before it are written, and other connections go on. A sender that
disconnects mid-frame loses that frame.

A unix: path that is a socket nobody accepts on (left by a sluice-logd
that was killed) is removed and listened on again; anything else there (a
file, a live listener) makes the address fail.

FILE is never followed if it is a symbolic link, at start or when it is
opened again (rotation, SIGHUP): that is an error ('sluice-logd: FILE: a
symbolic link: refusing to follow it (ELOOP)'), as in sluice-log.

Signals: SIGHUP closes and reopens FILE (after an external rename), and
tries a write that waits for room at once. SIGTERM and SIGINT stop
accepting and reading: every message already read is written, once, whole,
then sluice-logd exits 0. While FILE does not take them (a FIFO nobody
reads, a full disk), a second SIGTERM or SIGINT, or the end of --grace,
ends the wait: 'sluice-logd: FILE: K of N messages not written: REASON',
exit status 1 (a message being written then may be cut short in FILE).

Writing waits for the disk: while FILE cannot keep up, no connection is
read, so the senders are held back by TCP and memory stays bounded.

systemd: --listen, --listen-relp and --listen-tls take fd:NAME, the sockets
a socket unit passes under FileDescriptorName=NAME (LISTEN_FDS), each served
(printed as 'listening on fd:NAME (ADDR)'); a NAME not passed, or a socket
that is not a listening stream socket (Accept=yes), is bad usage. With
NOTIFY_SOCKET set (Type=notify), sluice-logd says READY=1 once every address
listens and FILE is open, STATUS= with its counts (every 2 s when they
change), STOPPING=1 at SIGTERM, and WATCHDOG=1 every WATCHDOG_USEC/2 when
WatchdogSec= is set. Both need libsystemd at build time.

Accepting: when the process is out of file descriptors (EMFILE, ENFILE) or
memory, accepting pauses for 100 ms at a time and the connections go on;
said on standard error at most once every 10 s, with a count.

Exit status: 0 after SIGTERM/SIGINT with every message read in FILE; 1 when
FILE cannot be opened or written (with --on-full exit: is full), messages
were not written, or an address cannot be listened on; 2 on bad usage.

A missing or unreadable --tls-* file, one that is not a regular file (a
FIFO, a device: 'not a regular file'), or one OpenSSL cannot load (not
PEM, a key that does not match the certificate), is bad usage (exit
status 2).

Example: sluice-logd --listen 127.0.0.1:6514 --listen unix:/run/app-log.sock --max-size 100M --compress zstd app.log
         sluice-logd --listen-relp 127.0.0.1:2514 --fsync ack app.log
         sluice-logd --listen-tls 0.0.0.0:6514 --tls-cert logd.crt --tls-key logd.key --tls-client-ca ca.crt app.log
         sluice-logd --listen-relp 0.0.0.0:2514 --forward relp://store1:2514 --forward relp://store2:2514
)";

constexpr sluice_tools::tool this_tool{"sluice-logd", usage_text};

struct options {
  std::vector<std::string> listen;
  std::vector<std::string> listen_relp;  // HOST:PORT
  sluice_tools::tls_server_args tls;     // --listen-tls, --tls-*
  sluice::syslog_frame_reader::mode framing = sluice::syslog_frame_reader::mode::automatic;
  std::size_t max_message = sluice_tools::default_max_message;
  std::string file;  // FILE; on a relay the next hops' name (relay_name()), which messages give
  sluice_tools::relay_settings relay;  // --forward, --window, --give-up-after, --forward-tls-*
  sluice::log_options log;
  bool stats = false;
  bool json = false;
  sluice::net::server_options server;  // --socket-mode, --socket-group
  bool exit_on_full = false;                      // --on-full exit
  std::optional<std::chrono::milliseconds> grace;  // --grace
  std::string grace_text;
  std::optional<std::size_t> max_connections;
  std::chrono::milliseconds idle_timeout{0};
  std::string idle_text;
  sluice_tools::metrics_args metrics;  // --metrics
  unsigned threads = 1;  // --threads: event loops, each accepting and reading its own connections
};

// HOST:PORT, IPv6 in brackets (args.h's parser, as every tool's); a bad one
// is bad usage.
std::pair<std::string, std::uint16_t> host_port(const std::string& addr, const char* opt) {
  std::pair<std::string, std::uint16_t> hp;
  std::string why;
  if (!sluice_tools::parse_host_port(opt, addr, hp.first, hp.second, 0, why)) this_tool.usage_error(why);
  return hp;
}

// --threads above 1 on a relay: each loop has its own RELP session to the
// next hop. A spool is one directory, which one loop owns; a Kafka hop
// per loop (a producer each, its delivery reports answered on their own
// loop) is not built.
void check_threads(const options& o) {
  if (o.threads == 1 || !o.relay.enabled()) return;
  if (o.relay.kafka())
    this_tool.usage_error("--threads above 1 goes with --forward relp:// only, not kafka:// (a relay to Kafka runs one loop)");
  if (!o.relay.spool.dir.empty())
    this_tool.usage_error("--threads above 1 does not go with --spool (one spool directory, one loop)");
}

options parse_args(int argc, char** argv) {
  options o;
  enum { listen = 256, framing, max_message, max_size, keep, fsync, stats, json, on_full, grace, max_conn, idle,
         socket_mode, socket_group, listen_relp, listen_tls, tls_cert, tls_key, tls_client_ca, compress,
         forward, window, give_up_after, forward_tls_ca, forward_tls_name, forward_tls_cert,
         forward_tls_key, spool, spool_max, metrics, threads };
  static const option long_options[] = {
      {"listen", required_argument, nullptr, listen},     {"framing", required_argument, nullptr, framing},
      {"max-message", required_argument, nullptr, max_message},
      {"max-size", required_argument, nullptr, max_size}, {"keep", required_argument, nullptr, keep},
      {"fsync", required_argument, nullptr, fsync},       {"stats", no_argument, nullptr, stats},
      {"json", no_argument, nullptr, json},               {"help", no_argument, nullptr, 'h'},
      {"socket-mode", required_argument, nullptr, socket_mode},
      {"socket-group", required_argument, nullptr, socket_group},
      {"on-full", required_argument, nullptr, on_full},   {"grace", required_argument, nullptr, grace},
      {"max-connections", required_argument, nullptr, max_conn},
      {"idle-timeout", required_argument, nullptr, idle},
      {"listen-relp", required_argument, nullptr, listen_relp},
      {"listen-tls", required_argument, nullptr, listen_tls},
      {"tls-cert", required_argument, nullptr, tls_cert},
      {"tls-key", required_argument, nullptr, tls_key},
      {"tls-client-ca", required_argument, nullptr, tls_client_ca},
      {"compress", required_argument, nullptr, compress},
      {"metrics", required_argument, nullptr, metrics},
      {"forward", required_argument, nullptr, forward},
      {"window", required_argument, nullptr, window},
      {"give-up-after", required_argument, nullptr, give_up_after},
      {"forward-tls-ca", required_argument, nullptr, forward_tls_ca},
      {"forward-tls-name", required_argument, nullptr, forward_tls_name},
      {"forward-tls-cert", required_argument, nullptr, forward_tls_cert},
      {"forward-tls-key", required_argument, nullptr, forward_tls_key},
      {"spool", required_argument, nullptr, spool},
      {"spool-max", required_argument, nullptr, spool_max},
      {"threads", required_argument, nullptr, threads},
      {nullptr, 0, nullptr, 0},
  };
  opterr = 0;
  int c;
  std::uint64_t v = 0;
  const char* file_option = nullptr;  // the first of FILE's options, which a relay refuses
  while ((c = ::getopt_long(argc, argv, ":hX:", long_options, nullptr)) != -1) {
    const std::string arg = optarg ? optarg : "";
    switch (c) {
      case listen:
        if (arg == "unix:") this_tool.usage_error("--listen unix: wants a path");
        if (sluice_tools::systemd::is_passed(arg)) sluice_tools::systemd::check_passed(this_tool, "--listen", arg);
        else if (arg.rfind("unix:", 0) != 0) host_port(arg, "--listen");
        o.listen.push_back(arg);
        break;
      case listen_relp:
        if (arg.rfind("unix:", 0) == 0) this_tool.usage_error("--listen-relp wants HOST:PORT, not a Unix socket, got '" + arg + "'");
        if (sluice_tools::systemd::is_passed(arg)) sluice_tools::systemd::check_passed(this_tool, "--listen-relp", arg);
        else host_port(arg, "--listen-relp");
        o.listen_relp.push_back(arg);
        break;
      case listen_tls: sluice_tools::add_listen_tls(this_tool, o.tls, arg); break;
      case tls_cert: o.tls.cert = arg; break;
      case tls_key: o.tls.key = arg; break;
      case tls_client_ca: o.tls.client_ca = arg; break;
      case forward: sluice_tools::add_forward(this_tool, o.relay, arg); break;
      case 'X': sluice_tools::add_forward_kafka_setting(this_tool, o.relay, arg); break;
      case window: sluice_tools::set_forward_window(this_tool, o.relay, arg); break;
      case give_up_after: sluice_tools::set_forward_give_up(this_tool, o.relay, arg); break;
      case forward_tls_ca: o.relay.tls_ca = arg; break;
      case forward_tls_name: o.relay.tls_name = arg; break;
      case forward_tls_cert: o.relay.tls_cert = arg; break;
      case forward_tls_key: o.relay.tls_key = arg; break;
      case spool:
        if (arg.empty()) this_tool.usage_error("--spool wants a directory");
        o.relay.spool.dir = arg;
        break;
      case spool_max: sluice_tools::set_forward_spool_max(this_tool, o.relay, arg); break;
      case framing:
        if (arg == "auto") o.framing = sluice::syslog_frame_reader::mode::automatic;
        else if (arg == "octet") o.framing = sluice::syslog_frame_reader::mode::octet_counting;
        else if (arg == "lf") o.framing = sluice::syslog_frame_reader::mode::lf;
        else this_tool.usage_error("--framing wants auto, octet or lf, got '" + arg + "'");
        break;
      case max_message:
        if (!sluice_tools::parse_size(optarg, true, 1u << 30, v) || v < 1)
          this_tool.usage_error("--max-message wants a number of bytes from 1 to 1G, got '" + arg + "'");
        o.max_message = static_cast<std::size_t>(v);
        break;
      case max_size:
        if (!file_option) file_option = "--max-size";
        if (!sluice_tools::parse_size(optarg, true, UINT64_MAX >> 1, v))
          this_tool.usage_error("--max-size wants a number of bytes, with K, M or G or none, got '" + arg + "'");
        o.log.max_size = v;
        break;
      case keep:
        if (!file_option) file_option = "--keep";
        if (!sluice_tools::parse_size(optarg, false, 100'000, v))
          this_tool.usage_error("--keep wants a whole number from 0 to 100000, got '" + arg + "'");
        o.log.keep = static_cast<unsigned>(v);
        break;
      case compress:
        if (!file_option) file_option = "--compress";
        if (!sluice_tools::parse_compress(arg, o.log))
          this_tool.usage_error("--compress wants none, gzip[:1-9] or zstd[:1-22], got '" + arg + "'");
        if (!sluice::log_compression_available(o.log.compress))
          this_tool.usage_error("--compress " + arg + ": this sluice-logd was built without it");
        break;
      case fsync:
        if (!file_option) file_option = "--fsync";
        if (arg == "ack") {
          // A sync whenever any byte is unsynced: the worker checks after
          // each batch, so each batch is synced once, before its callbacks.
          o.log.fsync = sluice::log_options::fsync_policy::every_bytes;
          o.log.fsync_bytes = 0;
        } else if (!sluice_tools::parse_fsync(arg, o.log)) {
          this_tool.usage_error("--fsync wants never, end, bytes=SIZE, ms=T (1 to 86400000) or ack, got '" + arg + "'");
        }
        break;
      case stats: o.stats = true; break;
      case threads:
        if (!sluice_tools::parse_size(optarg, false, 256, v) || v < 1)
          this_tool.usage_error("--threads wants a whole number from 1 to 256, got '" + arg + "'");
        o.threads = static_cast<unsigned>(v);
        break;
      case json: o.json = true; break;
      case metrics: sluice_tools::add_metrics_arg(this_tool, o.metrics, arg); break;
      case socket_mode:
        if (!(o.server.unix_mode = sluice_tools::parse_socket_mode(arg)))
          this_tool.usage_error("--socket-mode wants an octal mode from 0 to 777, got '" + arg + "'");
        break;
      case socket_group:
        if (!(o.server.unix_group = sluice_tools::parse_socket_group(arg)))
          this_tool.usage_error("--socket-group wants a group name or number, got '" + arg + "'");
        break;
      case on_full:
        if (!file_option) file_option = "--on-full";
        if (arg != "wait" && arg != "exit") this_tool.usage_error("--on-full wants wait or exit, got '" + arg + "'");
        o.exit_on_full = arg == "exit";
        break;
      case grace: {
        std::chrono::milliseconds t{};
        if (!sluice_tools::parse_duration(arg, t)) this_tool.usage_error("--grace wants a time, e.g. 5s, 500ms or 0, got '" + arg + "'");
        o.grace = t;
        o.grace_text = arg;
        break;
      }
      case max_conn:
        if (!sluice_tools::parse_size(optarg, false, 1'000'000, v) || v < 1)
          this_tool.usage_error("--max-connections wants a whole number from 1 to 1000000, got '" + arg + "'");
        o.max_connections = static_cast<std::size_t>(v);
        break;
      case idle:
        if (!sluice_tools::parse_duration(arg, o.idle_timeout) || o.idle_timeout.count() == 0)
          this_tool.usage_error("--idle-timeout wants a time above 0, e.g. 10m, 30s or 500ms, got '" + arg + "'");
        o.idle_text = arg;
        break;
      case 'h':
        this_tool.help();
      default:
        this_tool.bad_option(c, argv, ":hX:");
    }
  }
  if (o.json && !o.stats) this_tool.usage_error("--json goes with --stats");
  if (o.listen.empty() && o.listen_relp.empty() && !o.tls.enabled())
    this_tool.usage_error("missing --listen ADDR, --listen-relp HOST:PORT or --listen-tls HOST:PORT");
  sluice_tools::check_tls_server_args(this_tool, o.tls);
  if ((o.server.unix_mode || o.server.unix_group) &&
      std::none_of(o.listen.begin(), o.listen.end(), [](const std::string& a) { return a.rfind("unix:", 0) == 0; }))
    this_tool.usage_error("--socket-mode and --socket-group go with a --listen unix:PATH");
  // Compression acts on rotated files only: without them it would be
  // accepted and never happen.
  if (o.log.compress != sluice::log_options::compression::none && o.log.max_size == 0)
    this_tool.usage_error("--compress goes with --max-size (without rotation there is nothing to compress)");
  if (o.log.compress != sluice::log_options::compression::none && o.log.keep == 0)
    this_tool.usage_error("--compress goes with a --keep above 0 (--keep 0 keeps no rotated file to compress)");
  sluice_tools::check_relay_args(this_tool, o.relay, optind < argc, file_option);
  check_threads(o);
  if (o.relay.enabled()) {
    o.file = sluice_tools::relay_name(o.relay);
    return o;
  }
  if (optind == argc) this_tool.usage_error("missing FILE (or --forward relp://HOST:PORT)");
  if (argc - optind > 1) this_tool.usage_error(std::string("one FILE only, got also '") + argv[optind + 1] + "'");
  o.file = argv[optind];
  if (o.file.empty()) this_tool.usage_error("FILE is empty");
  o.log.wait_for_space = !o.exit_on_full;
  return o;
}

// One sender's connection.
struct connection {
  // What is read and written: the TCP or Unix socket itself, or on
  // --listen-tls the tls::socket's plaintext over `tcp`.
  sluice::duplex* sock;
  sluice::net::socket* tcp;
  sluice::syslog_frame_reader frames;
  std::string peer;
  std::size_t messages = 0;
  std::size_t bytes = 0;
  // A RELP connection's session (null on --listen), and its answers not
  // yet handed to the socket (sent once a turn, see flush_answers()).
  std::unique_ptr<sluice::relp_session> relp{};
  std::string answers{};
  std::size_t in_file = 0;   // RELP: messages handed to FILE (or the next hop) whose callback has not come
  bool flush_queued = false;  // in logd::to_flush_
  bool held = false;          // RELP: paused until the socket takes its answers ('drain')
  bool gone = false;          // the socket closed while in_file > 0: freed at the last callback
  bool draining = false;      // after serverclose: what comes is read and dropped
  bool answers_closed = false;  // close answered, serverclose sent or a write failed: no more answers
};

// librelp's default maximum frame (DATALEN) and rsyslog imrelp's.
constexpr std::size_t relp_max_frame = 128 * 1024;

using sluice_tools::escape_into;
using sluice_tools::needs_escape;
using sluice_tools::rate_limited_note;

class logd {
 public:
  // The main loop's logd; or, with `main`, another loop's, which counts
  // into `counts` and writes through the main one's worker.
  explicit logd(const options& o, logd* main = nullptr, sluice_tools::loop_counts* counts = nullptr)
      : o_(o), main_(main), n_(counts ? *counts : own_counts_) {
    if (main_) worker_ = main_->worker_;
    else notify_ = std::make_unique<sluice_tools::systemd::notifier>([this] { return status_line(); });
  }

  int run() {
    auto& loop = sluice::loop::current();
    metrics_ = sluice_tools::start_metrics(this_tool, o_.metrics, "sluice_logd", [this] { return stats(); });
    // As in sluice-log: the signals come to the loop, and the worker thread
    // keeps them blocked so that they all come to this one.
    const sigset_t old_mask = sluice_tools::hold_shutdown_signals();
    // Each watch takes an fd (an eventfd): with none left, say so and stop.
    std::error_code ec;
    term_ = sluice::on_signal(loop, SIGTERM, [this] { stop_signal(); }, ec);
    if (!ec) int_ = sluice::on_signal(loop, SIGINT, [this] { stop_signal(); }, ec);
    // A reopen also ends a wait for space at once (after room was made).
    if (!ec) hup_ = sluice::on_signal(loop, SIGHUP, [this] { if (worker_) worker_->request_reopen(); }, ec);
    if (ec) {
      std::fprintf(stderr, "sluice-logd: cannot handle signals: %s\n", ec.message().c_str());
      return 1;
    }

    const bool opened = o_.relay.enabled() ? open_relay() : open_file();
    ::pthread_sigmask(SIG_SETMASK, &old_mask, nullptr);
    if (!opened) return 1;
    out_->on(sluice::event::error, [this](std::error_code e) { output_failed(e); });
    out_->on(sluice::event::drain, [this] { set_paused(false); });

    for (const auto& [addr, fd] : sluice_tools::systemd::listeners(o_.listen)) listen(addr, false, fd);
    for (const auto& [addr, fd] : sluice_tools::systemd::listeners(o_.listen_relp)) listen(addr, true, fd);
#if SLUICE_TOOL_TLS
    if (o_.tls.enabled() && !listen_tls()) return 2;
#endif
    loop.run();
    // The other loops write through the worker: they end before it closes.
    for (auto& t : threads_) t.join();
    for (const auto& other : others_) status_ = std::max(status_, other->status);
    if (const std::error_code closed = worker_ ? worker_->close() : std::error_code(); closed && !failed_)
      output_failed(closed);
    // Every write's callback has come: each message is written or not.
    if (const std::size_t all = total(&sluice_tools::loop_counts::messages),
        written = total(&sluice_tools::loop_counts::written);
        written != all) {
      std::fprintf(stderr, "sluice-logd: %s: %zu of %zu messages not written\n", o_.file.c_str(), all - written, all);
      status_ = 1;
    }
    if (relay_) relay_->report(failed_ ? "the next hop failed" : "");
    if (o_.stats) print_totals();
    return status_;
  }

 private:
  // --threads: one of the other loops, on its own thread. It listens on the
  // main loop's HOST:PORT addresses (SO_REUSEPORT: the kernel spreads the
  // connections), adopts those the main loop's acceptor hands it (unix:,
  // fd:NAME, --listen-tls), and writes through the main loop's worker with
  // a writable of its own; its signals are the main loop's, which tells it
  // to stop.
  int run_other(sluice_tools::other_loop& slot, sluice::loop& main_loop) {
    auto& loop = sluice::loop::current();
    main_loop_ = &main_loop;
    if (!slot.begin(loop, [this] { stop(); }, [this](std::size_t index, int fd) { adopt(index, fd); })) return 0;
    if (!o_.relay.enabled()) {
      open_writable();
    } else if (!open_relay()) {
      // Said; the main loop stops every loop.
      stop_all();
      slot.end();
      return 1;
    } else {
      publish_relay_stats(slot);
    }
    out_->on(sluice::event::error, [this](std::error_code e) { output_failed(e); });
    out_->on(sluice::event::drain, [this] {
      n_.waiting = out_->writable_length();
      set_paused(false);
    });
    for (const auto& addr : o_.listen) listen(addr, false, -1);
    for (const auto& addr : o_.listen_relp) listen(addr, true, -1);
    // The main loop's listeners were all made before this thread began.
    for (const auto& h : main_->handed_) {
#if SLUICE_TOOL_TLS
      if (h.tls) {
        if (!adopt_only_tls()) {
          status_ = 1;
          stop();
          break;
        }
        continue;
      }
#endif
      adopt_only(h.relp);
    }
    // Its connections come through posts only: run() waits for them.
    if (!handed_.empty() && !stopping_) {
      loop.hold();
      held_ = true;
    }
    if (listening_ == 0 && !stopping_) listeners_ready();
    loop.run();
    slot.end();
    if (relay_) {
      // Every answer of the next hop has come: the last snapshot is whole.
      sluice_tools::stat_table t;
      relay_->add_stats(t);
      slot.publish_relay_stats(std::move(t));
    }
    n_.refused = refused_here();
    n_.waiting = 0;
    return status_;
  }

  // --threads on a relay, on another loop: its next hop's counts, a
  // snapshot each second for the main loop's --metrics (they live in the
  // RELP writable, which only this thread may read). The timer does not
  // keep the loop running.
  void publish_relay_stats(sluice_tools::other_loop& slot) {
    auto& loop = sluice::loop::current();
    sluice_tools::stat_table t;
    relay_->add_stats(t);
    slot.publish_relay_stats(std::move(t));
    loop.set_timeout(std::chrono::seconds(1), [this, &slot] { publish_relay_stats(slot); }, &relay_stats_tag_);
    loop.unref(&relay_stats_tag_);
  }

  // --threads N, once the main loop listens: the N-1 others, on the ports
  // it has (a port 0 resolved), with the shutdown signals blocked, so that
  // they all come to the main loop's watches.
  void start_others() {
    others_options_ = o_;
    others_options_.listen.clear();
    others_options_.listen_relp.clear();
    others_options_.tls.listen.clear();
    for (std::size_t i = 0; i < servers_.size(); ++i) {
      if (server_handed_[i]) continue;  // the main loop hands its connections out
      const auto a = servers_[i]->address();
      const std::string host = a->family == "IPv6" ? "[" + a->address + "]" : a->address;
      (server_relp_[i] ? others_options_.listen_relp : others_options_.listen)
          .push_back(host + ":" + std::to_string(a->port));
    }
    sigset_t held, old_mask;
    sigemptyset(&held);
    for (int sig : {SIGTERM, SIGINT, SIGHUP}) sigaddset(&held, sig);
    ::pthread_sigmask(SIG_BLOCK, &held, &old_mask);
    sluice::loop* main_loop = &sluice::loop::current();
    for (unsigned i = 1; i < o_.threads; ++i) {
      others_.push_back(std::make_unique<sluice_tools::other_loop>());
      threads_.emplace_back([this, main_loop, i, slot = others_.back().get()] {
        // Named for top -H and the tests: sluice-loop1, sluice-loop2, ...
        ::pthread_setname_np(::pthread_self(), ("sluice-loop" + std::to_string(i)).substr(0, 15).c_str());
        logd other(others_options_, this, &slot->counts);
        slot->status = other.run_other(*slot, *main_loop);
      });
    }
    ::pthread_sigmask(SIG_SETMASK, &old_mask, nullptr);
  }

  // On the main loop: another loop listens on every address.
  void other_up() {
    if (++others_up_ < others_.size()) return;
    std::fprintf(stderr, "sluice-logd: %u threads listening\n", o_.threads);
    notify_->ready();
  }

  // The sum of a count over the loops; the main loop's own thread only
  // adds to its own, the others are read as they are now.
  std::size_t total(sluice_tools::loop_counter sluice_tools::loop_counts::*count) const {
    std::size_t sum = n_.*count;
    for (const auto& other : others_) sum += other->counts.*count;
    return sum;
  }

  std::size_t refused_here() const {
    std::size_t refused = 0;
    for (const auto& s : servers_) refused += s->dropped();
#if SLUICE_TOOL_TLS
    for (const auto& s : tls_servers_) refused += s->dropped();
#endif
    return refused;
  }

  bool open_file() {
    sluice::log_options log = o_.log;
    sluice_tools::say_compress_problems(log, "sluice-logd");
    std::error_code ec;
    own_worker_ = sluice::log_worker::open(o_.file, log, ec);
    worker_ = own_worker_.get();
    if (!worker_) {
      std::fprintf(stderr, "sluice-logd: %s: %s\n", o_.file.c_str(), sluice_tools::file_error(ec).c_str());
      return false;
    }
    open_writable();
    return true;
  }

  // This loop's writable on the worker (on --threads' other loops, on the
  // main loop's worker: a log_worker takes any number of producers).
  void open_writable() {
    // With --fsync ack a batch is what comes while the last one is synced:
    // the more it may hold, the fewer fsyncs a message (1 MiB: about 6,000
    // messages of 180 bytes, one fsync of a few ms).
    const bool ack = o_.log.fsync == sluice::log_options::fsync_policy::every_bytes && o_.log.fsync_bytes == 0;
    out_ = sluice::make_worker_writable(*worker_, {.high_water_mark = ack ? 1024 * 1024 : 256 * 1024});
  }

  // --forward: the RELP writable to the next hop is the output; its write
  // callbacks come with the next hop's answers (relay_output.h).
  bool open_relay() {
    relay_ = std::make_unique<sluice_tools::relay_output>(o_.relay);
    std::string why;
    out_ = relay_->open(o_.max_message, why);
    // A setting librdkafka refuses (-X) is the command line's fault, as in
    // sluice-log.
    if (!out_ && o_.relay.kafka()) this_tool.usage_error("--forward " + o_.relay.forward.front() + ": " + why);
    if (!out_) std::fprintf(stderr, "sluice-logd: %s: %s\n", o_.file.c_str(), why.c_str());
    return out_ != nullptr;
  }

  static void say_listening(const std::string& addr, const std::optional<sluice::net::address_info>& a,
                            const char* kind) {
    if (sluice_tools::systemd::is_passed(addr))
      std::fprintf(stderr, "sluice-logd: listening on %s%s\n", sluice_tools::systemd::describe_passed(addr, *a).c_str(), kind);
    else if (addr.rfind("unix:", 0) == 0)
      std::fprintf(stderr, "sluice-logd: listening on %s%s\n", addr.c_str(), kind);
    else if (a->family == "IPv6")
      std::fprintf(stderr, "sluice-logd: listening on [%s]:%u%s\n", a->address.c_str(), a->port, kind);
    else
      std::fprintf(stderr, "sluice-logd: listening on %s:%u%s\n", a->address.c_str(), a->port, kind);
  }

  // `fd`: a socket passed by systemd (addr is fd:NAME), or -1. With
  // --threads, a HOST:PORT is listened on by every loop (SO_REUSEPORT);
  // a Unix path or a passed socket cannot be shared so, and the main loop
  // accepts its connections alone and hands them out (hand_out()).
  void listen(const std::string& addr, bool relp, int fd) {
    sluice::net::server_options so = o_.server;
    so.max_connections = o_.max_connections;
    const bool handed = o_.threads > 1 && (fd >= 0 || addr.rfind("unix:", 0) == 0);
    so.reuse_port = o_.threads > 1 && !handed;
    if (handed) so.hand_off = [this, index = handed_.size()](int c) { hand_out(index, c); };
    auto srv = std::make_unique<sluice::net::server>(so);
    sluice::net::server* s = srv.get();
    auto up = std::make_shared<bool>(false);
    s->on(sluice::event::listening, [this, s, addr, up, relp] {
      *up = true;
      if (!main_) say_listening(addr, s->address(), relp ? " (RELP)" : "");
      listener_up();
    });
    on_server_error(*s, addr, up);
    s->on_connection([this, relp](sluice::net::socket& sock) { accept(sock, sock, relp); });
    if (fd >= 0) {
      s->listen(sluice::net::handle{fd});
    } else if (addr.rfind("unix:", 0) == 0) {
      s->listen(std::string_view(addr).substr(5));
    } else {
      const auto [host, port] = host_port(addr, relp ? "--listen-relp" : "--listen");
      s->listen(port, host);
    }
    ++listening_;
    if (handed) handed_.push_back({s, relp, false});
    servers_.push_back(std::move(srv));
    server_relp_.push_back(relp);
    server_handed_.push_back(handed);
  }

  // --threads, on another loop: a listener that does not listen, for the
  // connections the main loop's acceptor hands this loop (adopt()).
  void adopt_only(bool relp) {
    sluice::net::server_options so = o_.server;
    so.max_connections = o_.max_connections;
    auto srv = std::make_unique<sluice::net::server>(so);
    sluice::net::server* s = srv.get();
    on_server_error(*s, "", std::make_shared<bool>(true));
    s->on_connection([this, relp](sluice::net::socket& sock) { accept(sock, sock, relp); });
    handed_.push_back({s, relp, false});
    servers_.push_back(std::move(srv));
    server_relp_.push_back(relp);
    server_handed_.push_back(true);
  }

  // --threads, on the main loop: a connection its acceptor took goes to
  // the loops in turn, this one included, so that each gets its share
  // whatever the peers' addresses (SO_REUSEPORT's hash may give one loop
  // all of a few connections). Until every loop runs, and when the one
  // whose turn it is has stopped, it is served here.
  void hand_out(std::size_t index, int fd) {
    if (!others_.empty() && others_up_ == others_.size()) {
      const std::size_t i = next_loop_++ % (others_.size() + 1);
      if (i > 0 && others_[i - 1]->hand(index, fd)) return;
    }
    handed_[index].tcp->adopt(fd);
  }

  // On another loop, from hand_out(): its listener `index` serves it.
  void adopt(std::size_t index, int fd) { handed_[index].tcp->adopt(fd); }

  // READY=1 once every listener listens (FILE is open before any).
  void listener_up() {
    if (++listeners_up_ == listening_) listeners_ready();
  }

  void listeners_ready() {
    if (main_) main_loop_->post([m = main_] { m->other_up(); });
    else if (o_.threads > 1 && !stopping_) start_others();
    else notify_->ready();
  }

  // STATUS=: what `systemctl status` shows.
  std::string status_line() const {
    using c = sluice_tools::loop_counts;
    return std::to_string(total(&c::messages)) + " messages, " + std::to_string(total(&c::written)) +
           " written, " + std::to_string(total(&c::connections)) + " connections (" +
           std::to_string(conns_.size() + total(&c::open)) + " open), " + std::to_string(total(&c::malformed)) +
           " malformed";
  }

  void on_server_error(sluice::emitter& s, const std::string& addr, const std::shared_ptr<bool>& up) {
    s.on(sluice::event::error, [this, addr, up](std::error_code e) {
      if (stopping_) return;
      // An accept error (EMFILE, ...): the server pauses accepting for a
      // while and goes on; so do the connections.
      if (*up) return accept_failed(addr, e);
      std::fprintf(stderr, "sluice-logd: %s: %s\n", addr.c_str(), e.message().c_str());
      status_ = 1;
      stop();
    });
  }

#if SLUICE_TOOL_TLS
  // Every --listen-tls address, one tls::server each, sharing the options
  // (the key and certificates are loaded by each). False: they cannot be
  // loaded, said with OpenSSL's reason. With --threads the main loop
  // accepts them all and hands them out (hand_out()): a connection's
  // handshake is done on the loop that adopts it.
  bool listen_tls() {
    for (const auto& [addr, fd] : sluice_tools::systemd::listeners(o_.tls.listen)) {
      std::optional<std::size_t> handed;
      if (o_.threads > 1) handed = handed_.size();
      sluice::tls::server* s = make_tls_server(handed);
      if (!s) return false;
      auto up = std::make_shared<bool>(false);
      s->on(sluice::event::listening, [this, s, addr, up] {
        *up = true;
        say_listening(addr, s->address(), " (TLS)");
        listener_up();
      });
      on_server_error(*s, addr, up);
      if (fd >= 0) {
        s->listen(sluice::net::handle{fd});
      } else {
        const auto [host, port] = host_port(addr, "--listen-tls");
        s->listen(port, host);
      }
      ++listening_;
    }
    return true;
  }

  // A tls::server with --listen-tls' options, and what its connections
  // do. `handed`: --threads, its index among the listeners whose
  // connections the main loop hands out; on the main loop its acceptor
  // hands them out, on another it only adopts. Null: the key or
  // certificates cannot be loaded (said).
  sluice::tls::server* make_tls_server(std::optional<std::size_t> handed) {
    sluice::net::server_options listener = o_.server;
    listener.max_connections = o_.max_connections;
    if (handed && !main_) listener.hand_off = [this, index = *handed](int c) { hand_out(index, c); };
    const sluice::tls::server_options to = sluice_tools::make_tls_server_options(o_.tls, listener, o_.idle_timeout);
    std::unique_ptr<sluice::tls::server> srv;
    try {
      srv = std::make_unique<sluice::tls::server>(to);
    } catch (const sluice::stream_error& e) {
      std::fprintf(stderr, "sluice-logd: --tls-cert %s, --tls-key %s: %s\n", o_.tls.cert.c_str(),
                   o_.tls.key.c_str(), e.what());
      return nullptr;
    }
    sluice::tls::server* s = srv.get();
    // A connection in its handshake is not one of conns_ yet: kept here
    // so that a stop does not wait for its handshake timeout.
    s->tcp().on_connection([this](sluice::net::socket& tcp) {
      if (stopping_) return void(tcp.destroy());
      handshaking_.insert(&tcp);
      tcp.on(sluice::event::close, [this, t = &tcp] { handshaking_.erase(t); });
    });
    s->on(sluice::event::tls_client_error, [this](const sluice::event_arg& a) {
      if (stopping_) return;  // cut off by the stop (close_servers()), not refused
      ++n_.tls_refused;
      auto* ts = static_cast<sluice::tls::socket*>(a.source);
      std::string more;
      if (tls_note_.due(more))
        std::fprintf(stderr, "sluice-logd: %s: TLS handshake failed: %s; connection closed, nothing written%s\n",
                     peer_of(ts->tcp()).c_str(), a.error.message().c_str(), more.c_str());
    });
    s->on_secure_connection([this](sluice::tls::socket& ts) {
      handshaking_.erase(&ts.tcp());
      accept(ts, ts.tcp(), false);
    });
    if (handed) handed_.push_back({&s->tcp(), false, true});
    tls_servers_.push_back(std::move(srv));
    return s;
  }

  // --threads, on another loop: a --listen-tls listener that only adopts.
  bool adopt_only_tls() {
    sluice::tls::server* s = make_tls_server(handed_.size());
    if (!s) return false;
    on_server_error(*s, "", std::make_shared<bool>(true));
    return true;
  }
#endif

  // Stops every listener, and cuts off the connections still in their TLS
  // handshake.
  void close_servers() {
    for (auto& s : servers_) s->close();
#if SLUICE_TOOL_TLS
    for (auto& s : tls_servers_) s->close();
    std::vector<sluice::net::socket*> hs(handshaking_.begin(), handshaking_.end());
    for (auto* t : hs) t->destroy();
#endif
    // Another loop waited for the acceptor's connections: none will come.
    if (held_) {
      held_ = false;
      sluice::loop::current().release();
    }
  }

  void accept_failed(const std::string& addr, std::error_code e) {
    ++n_.accept_errors;
    std::string more;
    if (accept_note_.due(more))
      std::fprintf(stderr, "sluice-logd: %s: accepting: %s%s; accepting again in a while, the connections go on\n",
                   addr.c_str(), e.message().c_str(), more.c_str());
  }

  void accept(sluice::duplex& sock, sluice::net::socket& tcp, bool relp) {
    if (stopping_) {
      sock.destroy();
      return;
    }
    ++n_.connections;
    auto c = std::make_unique<connection>(connection{&sock, &tcp, {o_.framing, o_.max_message, true}, peer_of(tcp)});
    // A RELP frame may be longer than --max-message (its message is cut
    // then, as on --listen), up to librelp's default maximum.
    if (relp) c->relp = std::make_unique<sluice::relp_session>(std::max<std::size_t>(relp_max_frame, o_.max_message));
    connection* conn = c.get();
    conns_.emplace(&sock, std::move(c));
    if (conns_.size() > trim_mark_) trim_mark_ = conns_.size();
    if (main_) {
      n_.open = conns_.size();
      n_.refused = refused_here();
    }
    if (relp) {
      // Answers are small writes that a sender waits for: Nagle's
      // algorithm would hold one back until the last is acknowledged
      // (a delayed ACK, 40 ms).
      tcp.set_no_delay();
      sock.on(sluice::event::data, [this, conn](std::string_view chunk) { on_relp_data(*conn, chunk); });
      // The peer takes its answers again: read it again.
      sock.on(sluice::event::drain, [this, conn] {
        conn->held = false;
        if (!paused_ && !stopping_) conn->sock->resume();
      });
    } else {
      sock.on(sluice::event::data, [this, conn](std::string_view chunk) { on_data(*conn, chunk); });
    }
    sock.on(sluice::event::end, [this, conn] {
      if (conn->relp ? conn->relp->mid_frame() && !conn->draining : conn->frames.mid_frame())
        std::fprintf(stderr, "sluice-logd: %s: disconnected mid-frame; that frame is lost\n", conn->peer.c_str());
    });
    sock.on(sluice::event::error, [conn](std::error_code e) {
      std::fprintf(stderr, "sluice-logd: %s: %s\n", conn->peer.c_str(), e.message().c_str());
    });
    sock.on(sluice::event::close, [this, conn] { closed(*conn); });
    if (o_.idle_timeout.count() > 0) {
      tcp.set_timeout(o_.idle_timeout);
      tcp.on(sluice::event::timeout, [this, conn] { idle(*conn); });
    }
    if (paused_) sock.pause();
  }

  // --idle-timeout: nothing came for that long. A connection paused by
  // backpressure, or a RELP sender waiting for its answers, is silent
  // because of us: it is given another period.
  void idle(connection& c) {
    if (paused_ || stopping_ || c.in_file > 0) {
      c.tcp->set_timeout(o_.idle_timeout);
      return;
    }
    ++n_.idle_closed;
    if (o_.stats)
      std::fprintf(stderr, "sluice-logd: %s: idle for %s; closing the connection%s\n", c.peer.c_str(),
                   o_.idle_text.c_str(),
                   (c.relp ? c.relp->mid_frame() : c.frames.mid_frame()) ? " (mid-frame: that frame is lost)" : "");
    c.sock->destroy();
  }

  static std::string peer_of(const sluice::net::socket& s) {
    const auto& r = s.remote();
    if (r.family == "unix") return "unix:" + s.local().address;
    return r.address + ":" + std::to_string(r.port);
  }

  void on_data(connection& c, std::string_view chunk) {
    const bool ok = c.frames.feed(chunk, [this, &c](std::string_view msg) { write(c, msg); });
    if (!ok) {
      ++n_.malformed;
      std::fprintf(stderr, "sluice-logd: %s: malformed frame: %s; closing the connection\n", c.peer.c_str(),
                   c.frames.error().c_str());
      c.sock->destroy();
    }
  }

  // A RELP connection's bytes: its session answers `open` at once; each
  // `syslog` message goes to FILE, and is answered when its write is done.
  void on_relp_data(connection& c, std::string_view chunk) {
    if (c.draining) return;  // after serverclose: the sender sends these again
    const bool ok = c.relp->feed(chunk, c.answers, [this, &c](std::string_view msg) { write(c, msg); });
    if (!ok) {
      ++n_.malformed;
      std::fprintf(stderr, "sluice-logd: %s: %s; closing the connection\n", c.peer.c_str(), c.relp->error().c_str());
      c.sock->destroy();
      return;
    }
    if (c.relp->close_due()) c.relp->answer_close(c.answers);
    if (!c.answers.empty()) queue_answers(c);
  }

  // One message, one line, every control character and backslash escaped.
  // Each write's callback counts it as written or not, and answers a RELP
  // message (never before: the answer says FILE has it).
  void write(connection& c, std::string_view msg) {
    // An octet-counted frame's (or a RELP message's) one trailing LF
    // (syslog-ng's loggen, many agents) is no part of the message, as
    // rsyslog has it.
    if (!msg.empty() && msg.back() == '\n' &&
        (c.relp || c.frames.framing() == sluice::syslog_frame_reader::mode::octet_counting))
      msg.remove_suffix(1);
    if (c.relp ? msg.size() > o_.max_message : c.frames.cut()) {
      msg = msg.substr(0, o_.max_message);
      truncated(c);
    }
    ++c.messages;
    c.bytes += msg.size();
    ++n_.messages;
    n_.bytes += msg.size();
    bool more;
    if (c.relp) {
      ++c.in_file;
      more = put(c, msg, [this, conn = &c](std::error_code ec) {
        if (!ec) ++n_.written;
        stored(*conn, ec);
      });
    } else {
      more = put(c, msg, [this](std::error_code ec) {
        if (!ec) ++n_.written;
      });
    }
    if (!more && !out_->errored()) set_paused(true);
    if (main_) n_.waiting = out_->writable_length();
    // The main loop says when the disk is full, for all.
    else if (space_timer_ == 0 && !quitting_ && worker_) watch_space();
  }

  bool put(const connection& c, std::string_view msg, sluice::write_cb landed) {
    if (relay_) return relay_->write(*out_, msg, c.peer, std::move(landed));  // on as it came, not as a line
    if (!needs_escape(msg)) return out_->vprint("{}\n", fmt::make_format_args(msg), std::move(landed));
    escape_into(msg, line_);
    return out_->write(std::string_view(line_), std::move(landed));
  }

  // A RELP message's write is done: answered if it landed. One that did not
  // is never answered, and so neither are the ones after it (the answers go
  // in order): the connection is closed, and the sender sends them again.
  void stored(connection& c, std::error_code ec) {
    --c.in_file;
    if (c.gone) {
      if (c.in_file == 0) delete &c;  // its socket closed before: the last callback frees it
      return;
    }
    if (c.answers_closed) return;  // closed, or said serverclose: no more answers
    if (ec && relay_ && relay_->refused(ec)) {
      // The next hop refused this message: the sender hears so (and drops
      // it), and the answers after it go on.
      c.relp->refuse_next(c.answers, "next hop refused it: " + ec.message());
      if (c.relp->close_due()) c.relp->answer_close(c.answers);
      return queue_answers(c);
    }
    if (ec) {
      c.answers_closed = true;
      c.sock->destroy();
      return;
    }
    ++n_.answered;
    c.relp->ack_next(c.answers);
    if (c.relp->close_due()) c.relp->answer_close(c.answers);
    queue_answers(c);
  }

  // The answers of a turn go out together: one write a connection, after
  // every callback of the batch that FILE has just taken.
  void queue_answers(connection& c) {
    if (c.flush_queued) return;
    c.flush_queued = true;
    to_flush_.push_back(&c);
    if (flush_scheduled_) return;
    flush_scheduled_ = true;
    sluice::loop::current().set_immediate([this] { flush_answers(); });
  }

  void flush_answers() {
    flush_scheduled_ = false;
    std::vector<connection*> now;
    now.swap(to_flush_);
    for (connection* c : now) {
      c->flush_queued = false;
      send_answers(*c);
    }
  }

  // A peer that does not read its answers is not read either, until its
  // socket drains: what it may send is bounded by what it takes.
  void send_answers(connection& c) {
    if (c.answers.empty() || c.answers_closed || c.sock->destroyed()) return;
    const bool more = c.sock->write(std::move(c.answers));
    c.answers.clear();
    if (c.relp->close_answered()) {
      c.answers_closed = true;
      c.sock->end();
      return;
    }
    if (!more && !c.held) {
      c.held = true;
      c.sock->pause();
    }
  }

  void truncated(const connection& c) {
    ++n_.truncated;
    std::string more;
    if (truncated_note_.due(more))
      std::fprintf(stderr, "sluice-logd: %s: a message longer than %zu bytes (--max-message) written cut to it%s\n",
                   c.peer.c_str(), o_.max_message, more.c_str());
  }

  // While messages wait for FILE: every second, whether the worker waits for
  // room on the disk (the readers are then paused by backpressure). Said
  // once when it starts and once when it ends.
  void watch_space() {
    space_timer_ = sluice::loop::current().set_timeout(std::chrono::seconds(1), [this] {
      space_timer_ = 0;
      if (worker_->waiting_for_space()) {
        if (!full_said_)
          std::fprintf(stderr,
                       "sluice-logd: %s: %s; nothing more is read (the senders are held back) until it can be "
                       "written: tried again every second and at SIGHUP\n",
                       o_.file.c_str(), std::strerror(ENOSPC));
        full_said_ = true;
      } else {
        space_back();
      }
      if (!quitting_ && (full_said_ || n_.written != n_.messages)) watch_space();
    });
  }

  void space_back() {
    if (!full_said_ || worker_->waiting_for_space()) return;
    full_said_ = false;
    std::fprintf(stderr, "sluice-logd: %s: written again\n", o_.file.c_str());
  }

  // Backpressure: every connection stops reading until 'drain'.
  void set_paused(bool p) {
    if (!p) space_back();
    if (paused_ == p || stopping_) return;
    paused_ = p;
    for (auto& [sock, c] : conns_) {
      if (p) sock->pause();
      else if (!c->held) sock->resume();
    }
  }

  void closed(connection& c) {
    if (o_.stats) {
      if (o_.json)
        std::fprintf(stderr, "{\"peer\":\"%s\",\"messages\":%zu,\"bytes\":%zu}\n", c.peer.c_str(), c.messages, c.bytes);
      else
        std::fprintf(stderr, "sluice-logd: %s: %zu messages, %zu bytes\n", c.peer.c_str(), c.messages, c.bytes);
    }
    if (c.flush_queued) std::erase(to_flush_, &c);
    auto it = conns_.find(c.sock);
    std::unique_ptr<connection> own = std::move(it->second);
    conns_.erase(it);  // the server deletes the socket itself
    if (main_) n_.open = conns_.size();
    // Messages of it still on their way to FILE: it lives until their
    // callbacks (see stored()).
    if (own->in_file > 0) {
      own->gone = true;
      own->sock = nullptr;
      own.release();
    }
    if (stopping_ && conns_.empty() && linger_timer_ != 0) {
      sluice::loop::current().clear_timeout(linger_timer_);
      linger_timer_ = 0;
    }
    // Many connections gone: their buffers go back to the system, not only
    // to malloc's free lists (2,000 senders' partial frames are 130 MB).
    if (trim_mark_ >= 64 && conns_.size() * 2 < trim_mark_) {
      ::malloc_trim(0);
      trim_mark_ = conns_.size();
    }
  }

  // SIGTERM, SIGINT: the first stops the reading (see stop()), with --grace
  // a limit on the wait for FILE; the second gives up the wait.
  void stop_signal() {
    if (stopping_) return give_up("a second signal ended the wait");
    stop();
    if (o_.grace)
      grace_timer_ = sluice::loop::current().set_timeout(*o_.grace, [this] {
        grace_timer_ = 0;
        // Every message written: only FILE's close is left, and it is let be
        // (a relay's is bounded: RELP's close; with --spool it waits for the
        // next hop, and what is left stays in the spool).
        if (total(&sluice_tools::loop_counts::written) == total(&sluice_tools::loop_counts::messages) && !(relay_ && relay_->spooling())) return;
        give_up(std::string(relay_ ? "the next hop did not answer them" : "FILE did not take them") +
                " within --grace " + o_.grace_text + " of the signal");
      });
  }

  // No new connection, no more reading; what was read (and is buffered in a
  // paused connection) is written, then the file ends. The buffered bytes
  // come out with read(), which emits them as 'data' (as Node's does), so
  // that on_data() frames them: once.
  //
  // A RELP connection stays open, not read, until FILE has taken all: its
  // answers go out, then 'serverclose', and its socket is ended (see
  // say_serverclose()).
  void stop() {
    if (stopping_) return;
    if (notify_) notify_->stopping();
    for (auto& [sock, c] : conns_)
      if (sock->readable_length() > 0) sock->read();
    stopping_ = true;
    stop_all();
    close_servers();
    std::vector<sluice::duplex*> socks;
    for (auto& [sock, c] : conns_) {
      if (c->relp && !c->answers_closed) sock->pause();
      else socks.push_back(sock);
    }
    for (auto* s : socks) s->destroy();
    out_->end([this](std::error_code ec) {
      if (ec) output_failed(ec);
      else space_back();
      quit();
      if (!failed_) say_serverclose();
    });
  }

  // --threads: a loop that stops stops them all, through the main one.
  void stop_all() {
    if (main_) main_loop_->post([m = main_] { m->stop(); });
    for (auto& other : others_) other->ask_stop();
  }

  // Every message is written and answered: each RELP sender hears that the
  // session ends ('serverclose'), and its socket is ended. What it sends
  // meanwhile is read and dropped (unanswered, so it sends that again
  // elsewhere), so that the close is a FIN, not a reset that could take
  // the answers with it; a sender that does not close its side within 2 s
  // is cut off.
  void say_serverclose() {
    std::vector<connection*> relps;
    for (auto& [sock, c] : conns_)
      if (c->relp && !sock->destroyed()) relps.push_back(c.get());
    if (relps.empty()) return;
    for (connection* c : relps) {
      send_answers(*c);
      c->draining = true;
      if (!c->answers_closed) {
        std::string bye;
        sluice::relp_session::append_serverclose(bye);
        c->sock->write(std::move(bye));
        c->answers_closed = true;
        c->sock->end();
      }
      c->sock->resume();
    }
    linger_timer_ = sluice::loop::current().set_timeout(std::chrono::seconds(2), [this] {
      linger_timer_ = 0;
      std::vector<sluice::duplex*> socks;
      for (auto& [sock, c] : conns_) socks.push_back(sock);
      for (auto* s : socks) s->destroy();
    });
  }

  // What waits for FILE stays unwritten: said with its count, and the exit
  // is 1. Without waiting for the worker, which may be blocked in write(2)
  // for good (a FIFO nobody reads): its thread ends with the process, and a
  // message it was writing may be cut.
  void give_up(const std::string& why) {
    // The messages of a batch that waits for space (--on-full wait) which
    // landed before the disk was full are in FILE, though their callbacks
    // will never come: the worker counts them.
    const std::size_t all = total(&sluice_tools::loop_counts::messages);
    std::size_t written = total(&sluice_tools::loop_counts::written);
    if (worker_ && worker_->chunks_written() > written) {
      n_.written += worker_->chunks_written() - written;
      written = worker_->chunks_written();
    }
    std::fprintf(stderr, "sluice-logd: %s: %zu of %zu messages not written: %s\n", o_.file.c_str(), all - written,
                 all, why.c_str());
    if (relay_) relay_->report(why);
    if (o_.stats) print_totals();
    std::fflush(stderr);
    std::_Exit(1);
  }

  void output_failed(std::error_code ec) {
    if (failed_) return;
    failed_ = true;
    status_ = 1;
    std::fprintf(stderr, "sluice-logd: %s: %s\n", o_.file.c_str(), sluice_tools::file_error(ec).c_str());
    if (!stopping_) {
      stopping_ = true;
      stop_all();
      close_servers();
      std::vector<sluice::duplex*> socks;
      for (auto& [sock, c] : conns_) socks.push_back(sock);
      for (auto* s : socks) s->destroy();
    }
    quit();
  }

  void quit() {
    quitting_ = true;
    term_.reset();
    int_.reset();
    hup_.reset();
    auto& loop = sluice::loop::current();
    if (grace_timer_ != 0) loop.clear_timeout(grace_timer_);
    if (space_timer_ != 0) loop.clear_timeout(space_timer_);
    grace_timer_ = space_timer_ = 0;
  }

  void print_totals() const { sluice_tools::print_stats("sluice-logd", stats(), o_.json); }

  // The one table of --stats and --metrics (logd_stats.h).
  // With --threads, each count is the sum over the loops.
  sluice_tools::stat_table stats() const {
    using c = sluice_tools::loop_counts;
    // FILE's counts (a relay has none: 0), then the relay's.
    const auto w = [this](std::size_t (sluice::log_worker::*count)() const noexcept) {
      return worker_ ? (worker_->*count)() : std::size_t{0};
    };
    const bool packed = worker_ && o_.log.compress != sluice::log_options::compression::none;
    sluice_tools::stat_table t = sluice_tools::logd_stats(
        {total(&c::messages), total(&c::bytes), total(&c::written), total(&c::connections), total(&c::malformed),
         w(&sluice::log_worker::rotations), w(&sluice::log_worker::reopens), total(&c::truncated),
         total(&c::idle_closed), refused_here() + total(&c::refused), total(&c::accept_errors),
         w(&sluice::log_worker::space_waits), w(&sluice::log_worker::fsyncs), total(&c::answered),
         total(&c::tls_refused), packed, packed ? worker_->compressed() : 0,
         packed ? worker_->compress_failures() : 0, conns_.size() + total(&c::open),
         (out_ ? out_->writable_length() : 0) + total(&c::waiting)});
    if (relay_) {
      // Each loop's next hop: the rows are the same on every loop (the
      // same --forward), summed.
      const std::size_t first = t.size();
      relay_->add_stats(t);
      for (const auto& other : others_) {
        const sluice_tools::stat_table theirs = other->relay_stats();
        for (std::size_t i = 0; i < theirs.size() && first + i < t.size(); ++i) t[first + i].value += theirs[i].value;
      }
    }
    return t;
  }

  const options& o_;
  logd* main_;  // --threads: the main loop's logd; null on the main loop itself
  sluice::loop* main_loop_ = nullptr;  // on another loop: the main one's
  std::unique_ptr<sluice::log_worker> own_worker_;
  sluice::log_worker* worker_ = nullptr;  // the main loop's, shared by every loop (null: a relay)
  // relay_ before out_, so that out_ goes first: a Kafka hop's callbacks,
  // all called as its writable goes, pass through relay_.
  std::unique_ptr<sluice_tools::relay_output> relay_;  // --forward: out_ goes to the next hop
  std::unique_ptr<sluice::writable> out_;
  std::vector<std::unique_ptr<sluice::net::server>> servers_;
#if SLUICE_TOOL_TLS
  std::vector<std::unique_ptr<sluice::tls::server>> tls_servers_;
  std::unordered_set<sluice::net::socket*> handshaking_;  // --listen-tls connections not yet secure
#endif
  std::unordered_map<sluice::duplex*, std::unique_ptr<connection>> conns_;
  sluice::signal_watch term_, int_, hup_;
  sluice::timer_id grace_timer_ = 0, space_timer_ = 0;
  std::string line_;  // an escaped line, reused
  std::vector<connection*> to_flush_;  // RELP connections with answers to send this turn
  bool flush_scheduled_ = false;
  sluice::timer_id linger_timer_ = 0;  // after serverclose: the bound on the senders' closing
  // This loop's counts: its own on the main loop, its slot's on another.
  sluice_tools::loop_counts own_counts_;
  sluice_tools::loop_counts& n_;
  rate_limited_note accept_note_, truncated_note_, tls_note_;
  std::unique_ptr<sluice_tools::metrics_server> metrics_;  // --metrics
  std::size_t trim_mark_ = 0;  // the most connections since the last malloc_trim()
  std::size_t listeners_up_ = 0;
  std::unique_ptr<sluice_tools::systemd::notifier> notify_;  // the main loop's only
  // --threads N: the other N-1 loops, each on its thread, and what they
  // listen on (the main loop's addresses, their ports resolved).
  std::vector<std::unique_ptr<sluice_tools::other_loop>> others_;
  std::vector<std::thread> threads_;
  options others_options_;
  std::vector<bool> server_relp_;  // servers_[i] is a --listen-relp one
  std::vector<bool> server_handed_;  // servers_[i]'s connections are the main loop's acceptor's
  // --threads: the listeners whose connections the main loop accepts and
  // hands out (unix:, fd:NAME, --listen-tls), in the same order on every
  // loop; on the main loop each accepts, on another each only adopts.
  struct handed_listener {
    sluice::net::server* tcp;
    bool relp;
    bool tls;
  };
  std::vector<handed_listener> handed_;
  std::size_t next_loop_ = 0;  // hand_out()'s turn
  std::size_t listening_ = 0;  // the listeners that listen here (listener_up() counts them up)
  bool held_ = false;          // another loop's hold while it adopts (see close_servers())
  char relay_stats_tag_ = 0;   // the owner of publish_relay_stats()'s timer
  std::size_t others_up_ = 0;
  int status_ = 0;
  bool paused_ = false;
  bool stopping_ = false;
  bool failed_ = false;
  bool quitting_ = false;
  bool full_said_ = false;
};

}  // namespace

int main(int argc, char** argv) {
  return this_tool.run(argc, argv, parse_args, [](const options& o) { return logd(o).run(); });
}
