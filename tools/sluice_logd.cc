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
// FILE's one worker. This file holds the options and main(); the loops
// are logd/logd.cc's.
#include <getopt.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "tool.h"
#include "args.h"
#include "logd/logd.h"
#include "metrics_server.h"
#include "socket_perms.h"
#include "systemd.h"
#include "tls_server_args.h"
#include "sluice/sluice.h"

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
                    --forward the same scheme). A message the hop refuses
                    (rsp 500) is answered 'rsp 500 next hop refused it:
                    ...' on the same connection and counted
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
--fsync ack once an fsync that began after it was written has returned
(two run at once behind the writes), with never or the others once
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

using options = sluice_tools::logd_options;
using sluice_tools::host_port;


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

}  // namespace

const sluice_tools::tool sluice_tools::logd_tool = this_tool;

int main(int argc, char** argv) {
  return this_tool.run(argc, argv, parse_args, sluice_tools::run_logd);
}
