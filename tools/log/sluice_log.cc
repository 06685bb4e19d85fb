// sluice-log: appends the lines of standard input to a log file, rotated by
// size, like Apache's rotatelogs or daemontools' multilog, or sends each line
// as one message to a syslog receiver (TCP or a Unix socket) or to a Kafka
// topic. Standard input is a readable over an fd_source split by
// for_each_line(); each line (with its optional timestamp) is one print()
// into the output writable.
//
// A file (log_file_output.h): a log_worker (the worker I/O thread
// rotates, reopens and syncs the file), and a worker_sink writable on this
// thread's loop. A line is one chunk, and the worker rotates only between
// chunks, so a line is never torn or split across two files.
//
// A network DEST (log_net_output.h): a syslog_writable (which reconnects on its own) or a Kafka
// writable; a line is one message, and each write's callback says whether it
// was sent, which the counts and the exit status report.
//
// Signals arrive through the loop (sluice/signals.h): SIGHUP asks the worker
// to reopen; SIGTERM and SIGINT stop the reading (fd_source::stop()), which
// makes what was read the whole input; its end end()s the writable, and once
// it has finished (every line handed over is written or sent) the worker, if
// any, is closed, which syncs (per --fsync) and closes the file. A network
// DEST gets --grace to take the rest after the signal; then what is left is
// dropped and counted.
//
// The loop's thread only reads and splits: a slow disk or receiver holds the
// output, whose completions then come late, so 'drain' holds the reading back.
#include <fcntl.h>
#include <getopt.h>
#include <pthread.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <memory>
#include <new>
#include <string>
#include <string_view>
#include <system_error>
#include <utility>
#include <vector>

#include "tool.h"
#include "nonblocking_stdin.h"
#include "args.h"
#include "log_dest.h"
#include "log_file_output.h"
#include "log_net_output.h"
#include "metrics_server.h"
#include "shutdown_signals.h"
#include "systemd.h"
#include "sluice/sluice.h"
#include "tls_files.h"
#if SLUICE_LOG_TLS
#include "load_module.h"
#include "log_tls.h"
#endif

namespace {

using sluice_tools::parse_fsync;
using sluice_tools::parse_size;

#if SLUICE_LOG_KAFKA
#define SLUICE_LOG_KAFKA_NOTE ""
#else
#define SLUICE_LOG_KAFKA_NOTE "\n                    (this sluice-log is built without Kafka: see below)"
#endif
#if SLUICE_LOG_TLS
#define SLUICE_LOG_TLS_NOTE ""
#else
#define SLUICE_LOG_TLS_NOTE "\n                    (this sluice-log is built without TLS: it needs OpenSSL)"
#endif

constexpr const char* usage_text = R"(usage: sluice-log [OPTION]... DEST
Appends the lines of standard input to a file, rotating it by size, like
rotatelogs or multilog, or sends each line as one message to a syslog
receiver or a Kafka topic.

DEST is one of:
  FILE              a file (a path; ./kafka:x for a file named kafka:x)
  syslog://HOST:PORT
                    a syslog receiver over TCP (rsyslog's imptcp, syslog-ng,
                    sluice-logd); HOST is an IP address ([::1] for IPv6) or
                    localhost: no name is looked up
  syslog+unix:PATH  a syslog receiver on a Unix stream socket
  syslog+tls://HOST:PORT
                    a syslog receiver over TLS (RFC 5425, port 6514
                    usually: rsyslog's imtcp with the ossl or gtls driver,
                    sluice-logd --listen-tls), octet-counted; the receiver's
                    certificate is verified (see --tls-ca, --tls-name))"
                                   SLUICE_LOG_TLS_NOTE R"(
  relp://HOST:PORT  a RELP receiver (rsyslog's imrelp, port 2514 usually):
                    each message is acknowledged by the receiver, and what
                    is not acknowledged is sent again after a reconnect
  relp+tls://HOST:PORT
                    RELP over TLS (rsyslog's imrelp with tls="on"),
                    verified as syslog+tls://)"
                                   SLUICE_LOG_TLS_NOTE R"(
  kafka://BROKER[,BROKER...]/TOPIC
                    a Kafka topic; BROKER is HOST:PORT (bootstrap.servers))"
                                   SLUICE_LOG_KAFKA_NOTE R"(

Options for every DEST:
  --timestamp       start each line with the time it was read, RFC 3339 in
                    UTC with microseconds and a space:
                    2026-11-30T00:00:00.123456Z <line>
  --max-line-length N
                    the longest line accepted, in bytes (default 1048576)
  --stats           at exit, print the counts on standard error:
                    FILE:   'sluice-log: N lines, B bytes, R rotations,
                            H reopens' (N: lines written, B: bytes written,
                            timestamps and newlines included; a line the
                            file refused is not counted); with --compress
                            also ', C compressed, F failed compressions'
                            (rotated files compressed; tries that failed)
                    syslog: 'sluice-log: N lines, S sent, D dropped,
                            R reconnects, L maybe lost, T truncated' (N:
                            lines read, S: in the kernel's socket buffer, D:
                            given up, R: connections made after the first,
                            L: of S, sent on connections the receiver broke
                            (see 'Lost connections'), T: cut to
                            --max-message)
                    relp:   'sluice-log: N lines, A acked, S resent,
                            D dropped, R reconnects, F refused, T truncated'
                            (A: acknowledged by the receiver, S: sent again
                            after a reconnect, so the receiver may hold them
                            twice, D: given up or refused, F: of D,
                            answered other than 200)
                    with --spool, the line goes on: 'P spooled (B
                            bytes), Q sent from spool, A acked, F refused,
                            K left in spool, E acked and X refused of
                            earlier runs, G segments left, R recovered, T
                            torn bytes, W spool failures' (P: this run's
                            lines written to the spool; Q, A, F: records
                            sent from the spool, earlier runs' included,
                            and of Q, acknowledged (syslog: in the socket
                            buffer) and refused (relp: answered other than
                            200, dropped from the spool, never sent
                            again); K: this run's lines in the spool
                            neither acknowledged nor refused, sent first by
                            the next run on DIR; E, X: of A and F, lines
                            an earlier run spooled; T: bytes of records
                            that were not whole and intact, each ending
                            its segment, never sent). syslog's S then
                            counts the lines taken into the spool, and N =
                            S + D still; relp's A, D and F count this run's
                            lines (A: acknowledged, from the spool or, while
                            it could not be written, from memory; D: given
                            up, or refused; F: of D, refused), and N = A +
                            D + K
                    kafka:  'sluice-log: N lines, D delivered, F failed'
                            (D: acknowledged by the broker)
  --json            with --stats: print them as one JSON object instead:
                    {"lines":N,"bytes":B,"rotations":R,"reopens":H} (with
                    --compress also "compressed":C,"compress_failures":F),
                    {"lines":N,"sent":S,"dropped":D,"reconnects":R,
                    "maybe_lost":L,"truncated":T},
                    {"lines":N,"acked":A,"resent":S,"dropped":D,
                    "reconnects":R,"refused":F,"truncated":T} or
                    {"lines":N,"delivered":D,"failed":F}; with
                    --spool, followed in the same object by
                    "spooled":P,"spooled_bytes":B,"sent_from_spool":Q,
                    "acked_from_spool":A,"refused_from_spool":F,
                    "left_in_spool":K,"earlier_acked":E,
                    "earlier_refused":X,"segments":G,
                    "recovered_segments":R,"torn_bytes":T,
                    "spool_failures":W
  --metrics HOST:PORT
                    serve the counts of --stats, and gauges of what is now
                    (bytes waiting in the stream, the age of the oldest line
                    not yet sent, acknowledged or written; with --spool its
                    bytes and segments), as Prometheus metrics: 'GET /metrics' on
                    HOST:PORT (port 0: any free one), printed as
                    'sluice-log: serving metrics on
                    http://HOST:PORT/metrics'. Read-only; a request over 8K
                    or not whole within 10 s is closed (counted). An address
                    that cannot be listened on (a port in use) is bad usage.
                    See docs/tools.md, Metrics.
  -h, --help        show this help

Options for a FILE:
  --max-size SIZE   rotate before a line that would take FILE past SIZE bytes:
                    FILE -> FILE.1, FILE.1 -> FILE.2, ..., then a fresh FILE.
                    SIZE is a byte count with an optional suffix K, M or G
                    (1024-based: 64K = 65536 bytes). 0, the default: never
                    rotate. A line is never split across two files; a line
                    longer than SIZE goes whole into a file of its own.
                    Only a regular file is rotated: a FIFO, a device or a
                    socket is written without rotation, with a note on
                    standard error. Several
                    sluice-log processes may write and rotate one FILE: a
                    lock (flock) on FILE orders their writes and rotations,
                    and each follows the others' rotations, so that every
                    line lands once and no file passes SIZE.
  --keep N          rotated files to keep (FILE.1, the newest, to FILE.N;
                    older ones are removed). Default 5; 0 keeps none.
  --compress METHOD gzip or zstd: rotated files become FILE.N.gz or
                    FILE.N.zst, compressed by a background thread (FILE
                    itself stays plain); --keep counts them. none, the
                    default: rotated files stay as they are. METHOD:LEVEL
                    sets the level (gzip:1 to gzip:9, default 6; zstd:1
                    to zstd:22, default 3). zstd and gzip:1 compress at
                    least half as fast as sluice-log writes; gzip's default
                    level, a sixth (perf/compress-rotation.sh). Needs
                    --max-size and a --keep above 0 (else nothing is
                    rotated and kept: bad usage). Several sluice-log
                    processes may compress one FILE (each its own
                    rotations; a lock orders them). A rotated file that
                    cannot be compressed (a full disk, FILE.gz.tmp not
                    creatable) stays plain, is said on standard error (at
                    most once every 10 s, with a count) and counted in
                    --stats, and is tried again 1 s later, then after twice
                    the last wait (up to 64 s). At start, a plain FILE.N is
                    removed only beside a FILE.N.gz that decompresses whole
                    into exactly it (a crash before its removal); beside
                    any other FILE.N.gz both are kept, and said.
  --fsync POLICY    when to fsync FILE:
                      never      leave it to the kernel (the default)
                      end        each file once, before it is closed (at
                                 rotation, on SIGHUP and at exit)
                      bytes=SIZE after every SIZE bytes written (SIZE as
                                 above; bytes=0: after every write), and
                                 before each file is closed
                      ms=T       at most T milliseconds (1 or more) after a
                                 write, and before each file is closed

Options for syslog://, syslog+unix: and relp:// (each line is sent as RFC
5424, '<PRI>1 TIMESTAMP HOSTNAME APP-NAME PROCID - - LINE', stamped when
sent):
  --facility F      kern, user (the default), mail, daemon, auth, syslog,
                    lpr, news, uucp, cron, authpriv, ftp, local0 .. local7,
                    or 0 to 23
  --severity S      emerg, alert, crit, err, warning, notice, info (the
                    default), debug, or 0 to 7
  --app-name NAME   APP-NAME (default '-', none; at most 48 characters)
  --hostname NAME   HOSTNAME (default: this machine's name)
  --max-message SIZE
                    the longest message sent, its header included, as the
                    receiver counts it (default 64K, sluice-logd's default
                    --max-message; rsyslog's is 8K: set both alike). A line
                    that makes a longer message is sent cut to SIZE (at a
                    UTF-8 character boundary), counted as truncated, with
                    one note on standard error. A receiver given a longer
                    message than it takes may cut it (rsyslog,
                    sluice-logd) or close the connection, losing what
                    followed (see 'Lost connections').
  --give-up-after T a message that has waited T for the receiver is given
                    up: it and every message after it are dropped (counted),
                    and sluice-log exits 1. Default: wait as long as it
                    takes. T is a whole number with ms, s (the default), m or h.
                    relp://: once messages have waited T for a session,
                    every unacknowledged one is dropped, and the rest.

Options for syslog:// and syslog+unix::
  --framing MODE    octet (the default): octet counting, 'LEN SP MSG' (RFC
                    6587); lf: each message ends with a LF, for old
                    receivers

Options for syslog+tls:// and relp+tls://:
  --tls-ca FILE     the CA certificates (PEM) the receiver's certificate
                    must chain to; default: the system's store
                    (/etc/ssl/certs)
  --tls-name NAME   the name the receiver's certificate must carry (a DNS
                    name in its subjectAltName, or an IP address in its IP
                    SANs); default: HOST. Sent as SNI when it is a name
  --tls-cert FILE   a client certificate (PEM; any intermediate ones after
                    it) to present, for a receiver that requires one
                    (rsyslog's x509/certvalid or x509/name, sluice-logd
                    --tls-client-ca)
  --tls-key FILE    its private key (PEM); a warning if its group or
                    others may read it
  A receiver whose certificate does not verify (another CA, expired, not
  carrying the name), or that refuses this client's certificate in the
  handshake (TLS 1.2; in TLS 1.3 its refusal comes after the handshake and
  looks like a reset connection), is not tried again: 'sluice-log: DEST:
  TLS: certificate verify failed: REASON', every line is dropped
  (counted), exit 1. A missing or unreadable --tls-*
  file, one that is not a regular file (a FIFO, a device), or one OpenSSL
  cannot load: exit 2 with the reason.
  What a success means over TLS, and what a broken connection can lose or
  send twice: docs/shipping.md.

Options for relp://:
  --window N        the most messages sent and not yet acknowledged
                    (default 1024; librelp's is 128). Each acknowledgement
                    lets the next go. After a reconnect up to N are sent
                    again: the most the receiver may store twice.

Options for a network DEST:
  --spool DIR       a durable spool: each line goes to an append-only
                    segment file in DIR (made 0700; refused if a symbolic
                    link, another user's, or writable by others) and is
                    sent from there, in order; a segment is deleted once
                    all its lines are sent (syslog) or acknowledged. While
                    the receiver is away or slow, the input is read on into
                    the spool instead of being held back. A run that could
                    not send everything (killed, --give-up-after, --grace)
                    leaves the rest in DIR, and the next run on DIR sends it
                    first. A line counts as written once it is in the spool
                    (in the kernel: it survives sluice-log, not a power
                    loss); the exit status is 0 only once every line is sent
                    and the spool empty. A spool that cannot be written
                    (ENOSPC, EIO) is said once on standard error, and lines
                    then wait in memory, with backpressure, as without it,
                    and go after what is on disk, in order; new lines go to
                    DIR again once those in memory are sent. A line the
                    RELP receiver refuses is dropped from the spool, as it
                    fails alone without it: said once, counted (--stats),
                    exit 1, never sent again; the lines after it go on. A
                    record in DIR that is not whole and intact (a tail torn
                    by a crash, a length past what its segment holds, a
                    checksum that does not match) ends its segment: the
                    rest of that segment is counted (torn bytes), never
                    sent; the next segment goes on.
  --spool-max SIZE  the most the spool holds on disk (default 1G; SIZE as
                    --max-size, at least 64K); when full, the input is held
                    back as without --spool
  --grace T         after SIGTERM or SIGINT, wait at most T (default 5s; as
                    --give-up-after) for the receiver to take the messages
                    read; then drop the rest, counted, and exit 1
  -X KEY=VALUE      kafka:// only, once or more: a librdkafka property
                    (librdkafka's CONFIGURATION.md), as kcat's -X, e.g.
                    -X acks=1 -X compression.codec=zstd; applied after
                    bootstrap.servers from DEST, so they may replace it

Lines: a line ends at "\n" or "\r\n" and is written with "\n" (so "\r\n"
becomes "\n"); a last line without a newline is written with one. To a
network DEST a line is one message, without its "\n".
A line longer than the maximum is an error: the lines before it are
written, then sluice-log stops with a message and exit status 1.

A FILE that is a symbolic link is refused, at start and whenever FILE is
opened again (rotation, SIGHUP, following another sluice-log's rotation):
'sluice-log: FILE: a symbolic link: refusing to follow it (ELOOP)', exit 1,
as sluice-logd does; nothing is written to the link's target.

Signals: SIGHUP closes and reopens FILE (after an external rename, as
logrotate does); it does nothing to a network DEST. SIGTERM and SIGINT stop
the reading: every line read so far is written (or sent), then sluice-log
exits 0, as at the end of the input. Once the shutdown has begun, SIGHUP,
SIGTERM and SIGINT are caught and ignored to the end: the last sync and
close of FILE are not cut short; to a network DEST, a second SIGTERM or
SIGINT ends the --grace wait at once.

Backpressure: writing waits for the disk or the receiver. When the file
cannot keep up, or while the syslog receiver is unreachable (sluice-log
reconnects, waiting 100 ms, then twice as long each time, up to 5 s) and
1024 messages wait, or while --window messages are unacknowledged by the
RELP receiver and as many more wait, or while librdkafka's queue is full,
standard input is not read, so memory stays bounded and the program writing to sluice-log is
held back. Nothing is dropped unless --give-up-after, --grace, a RELP
refusal or a Kafka delivery failure (message.timeout.ms, 5 minutes by default) says so; each
dropped message is counted and reported.

What a success means: to a FILE, the line is written (in the kernel; synced
per --fsync); to syslog, the message is in the kernel's socket buffer
(plain TCP can lose what is in flight when the connection breaks; see
docs/shipping.md); to RELP, the receiver acknowledged it ('rsp 200': what
that means, a queue or a disk, is the receiver's setting); to Kafka, the
broker acknowledged it (per acks).

Lost connections (syslog): a message is 'at risk' from its write until
the connection is next quiet (nothing written for 1 s and the socket's send
queue empty: every byte acknowledged by the receiver's host over TCP, read
by the receiver over a Unix socket). When the receiver closes the
connection (before sluice-log's end of input) or resets it (at any time)
with messages at risk, they may be lost: sluice-log says so on standard
error ('sluice-log: DEST: the receiver closed the connection (REASON) with
up to N messages in flight: they may be lost'), reconnects and sends the
rest, counts them (L above), and exits 1. For TCP the count is an upper
bound only for a receiver that had read what its host acknowledged; a
receiver that read everything and then closed cannot be told apart from
one that kept it all.

Kafka: kafka:// needs sluice-log built with librdkafka (meson -Dkafka=auto
or enabled, Debian's librdkafka-dev); without it, kafka:// is an error
(exit 2).

systemd: with NOTIFY_SOCKET set (Type=notify), sluice-log says READY=1 once
DEST is open, STATUS= with its counts (every 2 s when they change),
STOPPING=1 at SIGTERM or SIGINT, and WATCHDOG=1 every WATCHDOG_USEC/2 when
WatchdogSec= is set (with libsystemd at build time).

Exit status: 0 at the end of the input or on SIGTERM/SIGINT, with every line
read in the file, sent, or (relp://) acknowledged; 1 when FILE cannot be opened or written (reported
as 'sluice-log: FILE: <reason>'), when standard input cannot be read, on a
line too long, when messages were dropped (reported as 'sluice-log:
DEST: D of N messages not sent: <reason>', for relp:// 'not acknowledged';
a message the RELP receiver refused fails alone, the others go on), or when messages may be lost
(reported as 'sluice-log: DEST: up to L of the S messages sent may be lost:
the receiver broke C connections with messages in flight'); 2 on bad usage.

Example: my-server 2>&1 | sluice-log --max-size 100M --keep 5 --timestamp server.log
         my-server 2>&1 | sluice-log --app-name my-server syslog://10.0.0.5:514
         my-server 2>&1 | sluice-log --app-name my-server relp://10.0.0.5:2514
         my-server 2>&1 | sluice-log --tls-ca ca.crt --tls-cert me.crt --tls-key me.key \
                            syslog+tls://logs.example.internal:6514
         my-server 2>&1 | sluice-log -X acks=all kafka://k1:9092,k2:9092/logs
)";

constexpr sluice_tools::tool this_tool{"sluice-log", usage_text};

struct options {
  sluice_tools::log_destination dest;
  std::string dest_text;  // as given, for messages
  sluice::log_options log;
  sluice::syslog_options syslog;
  sluice::relp_options relp;
  std::vector<std::pair<std::string, std::string>> kafka_config;  // -X, in order
  std::chrono::milliseconds grace{5000};
  std::string grace_text = "5s";  // as given, for messages
  bool timestamp = false;
  bool stats = false;
  bool json = false;
  std::size_t max_line_length = sluice::line_options{}.max_line_length;
  std::size_t max_message = sluice_tools::default_max_message;
  sluice_tools::log_spool_settings spool;
  sluice_tools::metrics_args metrics;  // --metrics
  std::string tls_ca, tls_cert, tls_key, tls_name;  // syslog+tls://
};

#if SLUICE_LOG_TLS
// syslog+tls://: the files are checked (exit 2 with the reason), then
// loaded once, for every connection, by the TLS module (OpenSSL's reason,
// exit 2, for one it cannot load), and the receiver verified by --tls-ca
// and --tls-name.
void set_up_tls(options& o) {
  if (o.tls_cert.empty() != o.tls_key.empty())
    this_tool.usage_error(o.tls_cert.empty() ? "--tls-key goes with --tls-cert FILE" : "--tls-cert needs --tls-key FILE");
  for (auto [opt, path] : {std::pair{"--tls-ca", &o.tls_ca}, {"--tls-cert", &o.tls_cert}, {"--tls-key", &o.tls_key}}) {
    if (path->empty()) continue;
    const std::string why = sluice_tools::tls_file_problem(opt, *path);
    if (!why.empty()) this_tool.usage_error(why);
  }
  if (!o.tls_key.empty()) sluice_tools::warn_if_key_shared("sluice-log", "--tls-key", o.tls_key);
  std::string why;
  const bool relp = o.dest.type == sluice_tools::log_destination::kind::relp_tls;
  void* f = sluice_tools::load_module_symbol("sluice-log-tls.so", SLUICE_LOG_TLS_MODULE,
                                             relp ? "sluice_log_use_tls_relp" : "sluice_log_use_tls", why);
  if (!f) this_tool.usage_error(std::string(relp ? "relp+tls://" : "syslog+tls://") + ": cannot load sluice-log's TLS module: " + why);
  const sluice_log_tls_files files{o.tls_ca, o.tls_cert, o.tls_key, o.tls_name};
  const bool loaded = relp ? reinterpret_cast<sluice_log_use_tls_relp_fn>(f)(&o.relp, &files, &why)
                           : reinterpret_cast<sluice_log_use_tls_fn>(f)(&o.syslog, &files, &why);
  if (!loaded) {
    std::string named = !o.tls_ca.empty() ? "--tls-ca " + o.tls_ca : "";
    if (!o.tls_cert.empty()) named += (named.empty() ? "" : ", ") + ("--tls-cert " + o.tls_cert + ", --tls-key " + o.tls_key);
    this_tool.usage_error((named.empty() ? std::string("TLS") : named) + ": " + why);
  }
}
#endif

options parse_args(int argc, char** argv) {
  options o;
  enum {
    max_size = 256, keep, timestamp, fsync, max_line_length, stats, json,
    framing, facility, severity, app_name, hostname, give_up_after, grace, max_message, spool, spool_max,
      compress, window, tls_ca, tls_cert, tls_key, tls_name, metrics,
  };
  static const option long_options[] = {
      {"max-size", required_argument, nullptr, max_size},
      {"keep", required_argument, nullptr, keep},
      {"compress", required_argument, nullptr, compress},
      {"timestamp", no_argument, nullptr, timestamp},
      {"fsync", required_argument, nullptr, fsync},
      {"max-line-length", required_argument, nullptr, max_line_length},
      {"stats", no_argument, nullptr, stats},
      {"json", no_argument, nullptr, json},
      {"metrics", required_argument, nullptr, metrics},
      {"framing", required_argument, nullptr, framing},
      {"facility", required_argument, nullptr, facility},
      {"severity", required_argument, nullptr, severity},
      {"app-name", required_argument, nullptr, app_name},
      {"hostname", required_argument, nullptr, hostname},
      {"give-up-after", required_argument, nullptr, give_up_after},
      {"grace", required_argument, nullptr, grace},
      {"max-message", required_argument, nullptr, max_message},
      {"spool", required_argument, nullptr, spool},
      {"spool-max", required_argument, nullptr, spool_max},
      {"window", required_argument, nullptr, window},
      {"tls-ca", required_argument, nullptr, tls_ca},
      {"tls-cert", required_argument, nullptr, tls_cert},
      {"tls-key", required_argument, nullptr, tls_key},
      {"tls-name", required_argument, nullptr, tls_name},
      {"help", no_argument, nullptr, 'h'},
      {nullptr, 0, nullptr, 0},
  };
  // Which options were given, by kind, to check them against DEST.
  const char* file_option = nullptr;    // --max-size, --keep, --fsync, --compress
  const char* syslog_option = nullptr;  // --framing
  const char* message_option = nullptr; // --facility ... --give-up-after, --max-message: syslog and RELP
  const char* relp_option = nullptr;    // --window
  const char* network_option = nullptr; // --grace, --spool, --spool-max
  const char* kafka_option = nullptr;   // -X
  const char* tls_option = nullptr;     // --tls-*
  bool spool_max_given = false;
  opterr = 0;  // the messages below say more
  int c;
  std::uint64_t v = 0;
  while ((c = ::getopt_long(argc, argv, ":hX:", long_options, nullptr)) != -1) {
    switch (c) {
      case max_size:
        if (!parse_size(optarg, true, UINT64_MAX >> 1, v))
          this_tool.usage_error(std::string("--max-size wants a number of bytes, with K, M or G or none, got '") + optarg + "'");
        o.log.max_size = v;
        file_option = "--max-size";
        break;
      case keep:
        if (!parse_size(optarg, false, 100'000, v))
          this_tool.usage_error(std::string("--keep wants a whole number from 0 to 100000, got '") + optarg + "'");
        o.log.keep = static_cast<unsigned>(v);
        file_option = "--keep";
        break;
      case compress:
        if (!sluice_tools::parse_compress(optarg, o.log))
          this_tool.usage_error(std::string("--compress wants none, gzip[:1-9] or zstd[:1-22], got '") + optarg + "'");
        if (!sluice::log_compression_available(o.log.compress))
          this_tool.usage_error(std::string("--compress ") + optarg + ": this sluice-log was built without it");
        file_option = "--compress";
        break;
      case timestamp:
        o.timestamp = true;
        break;
      case fsync:
        if (!parse_fsync(optarg, o.log))
          this_tool.usage_error(std::string("--fsync wants never, end, bytes=SIZE or ms=T (1 to 86400000), got '") + optarg + "'");
        file_option = "--fsync";
        break;
      case max_line_length:
        if (!parse_size(optarg, false, 1ull << 30, v) || v < 1)
          this_tool.usage_error(std::string("--max-line-length wants a whole number of bytes from 1 to 1073741824, got '") +
                      optarg + "'");
        o.max_line_length = static_cast<std::size_t>(v);
        break;
      case stats:
        o.stats = true;
        break;
      case json:
        o.json = true;
        break;
      case metrics:
        sluice_tools::add_metrics_arg(this_tool, o.metrics, optarg);
        break;
      case framing:
        if (std::strcmp(optarg, "octet") == 0) o.syslog.framing = sluice::syslog_framing::octet_counting;
        else if (std::strcmp(optarg, "lf") == 0) o.syslog.framing = sluice::syslog_framing::lf;
        else this_tool.usage_error(std::string("--framing wants octet or lf, got '") + optarg + "'");
        syslog_option = "--framing";
        break;
      case facility:
        if (!sluice_tools::parse_syslog_facility(optarg, o.syslog.header.facility))
          this_tool.usage_error(std::string("--facility wants a name (user, daemon, local0 ...) or 0 to 23, got '") + optarg +
                      "'");
        message_option = "--facility";
        break;
      case severity:
        if (!sluice_tools::parse_syslog_severity(optarg, o.syslog.header.severity))
          this_tool.usage_error(std::string("--severity wants emerg, alert, crit, err, warning, notice, info, debug or 0 to 7, "
                                  "got '") + optarg + "'");
        message_option = "--severity";
        break;
      case app_name:
        if (optarg[0] == '\0') this_tool.usage_error("--app-name is empty");
        o.syslog.header.app_name = optarg;
        message_option = "--app-name";
        break;
      case hostname:
        if (optarg[0] == '\0') this_tool.usage_error("--hostname is empty");
        o.syslog.header.hostname = optarg;
        message_option = "--hostname";
        break;
      case give_up_after: {
        std::chrono::milliseconds t{};
        if (!sluice_tools::parse_duration(optarg, t) || t.count() == 0)
          this_tool.usage_error(std::string("--give-up-after wants a time above 0, e.g. 30s, 500ms or 2m, got '") + optarg + "'");
        o.syslog.give_up_after = t;
        message_option = "--give-up-after";
        break;
      }
      case grace:
        if (!sluice_tools::parse_duration(optarg, o.grace))
          this_tool.usage_error(std::string("--grace wants a time, e.g. 5s, 500ms or 0, got '") + optarg + "'");
        o.grace_text = optarg;
        network_option = "--grace";
        break;
      case max_message:
        if (!parse_size(optarg, true, 1ull << 30, v) || v < 1)
          this_tool.usage_error(std::string("--max-message wants a number of bytes from 1 to 1G, with K, M or G or none, got '") +
                      optarg + "'");
        o.max_message = static_cast<std::size_t>(v);
        message_option = "--max-message";
        break;
      case window:
        if (!parse_size(optarg, false, 1'000'000, v) || v < 1)
          this_tool.usage_error(std::string("--window wants a whole number of messages from 1 to 1000000, got '") + optarg + "'");
        o.relp.window = static_cast<std::size_t>(v);
        relp_option = "--window";
        break;
      case spool:
        if (optarg[0] == '\0') this_tool.usage_error("--spool is empty");
        o.spool.dir = optarg;
        network_option = "--spool";
        break;
      case spool_max:
        if (!parse_size(optarg, true, UINT64_MAX >> 1, v) || v < 64 * 1024)
          this_tool.usage_error(std::string("--spool-max wants a number of bytes from 64K, with K, M or G or none, got '") +
                                optarg + "'");
        o.spool.max_bytes = v;
        spool_max_given = true;
        network_option = "--spool-max";
        break;
      case tls_ca:
      case tls_cert:
      case tls_key:
      case tls_name: {
        std::string* field[] = {&o.tls_ca, &o.tls_cert, &o.tls_key, &o.tls_name};
        static const char* names[] = {"--tls-ca", "--tls-cert", "--tls-key", "--tls-name"};
        if (optarg[0] == '\0') this_tool.usage_error(std::string(names[c - tls_ca]) + " is empty");
        *field[c - tls_ca] = optarg;
        tls_option = names[c - tls_ca];
        break;
      }
      case 'X': {
        const char* eq = std::strchr(optarg, '=');
        if (!eq || eq == optarg || eq[1] == '\0')
          this_tool.usage_error(std::string("-X wants KEY=VALUE (a librdkafka property), got '") + optarg + "'");
        o.kafka_config.emplace_back(std::string(optarg, static_cast<std::size_t>(eq - optarg)), std::string(eq + 1));
        kafka_option = "-X";
        break;
      }
      case 'h':
        this_tool.help();
      default:
        this_tool.bad_option(c, argv, ":hX:");
    }
  }
  if (o.json && !o.stats) this_tool.usage_error("--json goes with --stats");
  if (spool_max_given && o.spool.dir.empty())
    this_tool.usage_error("--spool-max goes with --spool");
  if (optind == argc)
    this_tool.usage_error("missing DEST (a FILE, syslog://HOST:PORT, syslog+unix:PATH, syslog+tls://HOST:PORT, relp://HOST:PORT, "
                          "relp+tls://HOST:PORT or kafka://...)");
  if (argc - optind > 1) this_tool.usage_error(std::string("one DEST only, got also '") + argv[optind + 1] + "'");
  o.dest_text = argv[optind];
  if (o.dest_text.empty()) this_tool.usage_error("DEST is empty");
  std::string why;
  if (!sluice_tools::parse_log_destination(o.dest_text, o.dest, why)) this_tool.usage_error(why);
  using kind = sluice_tools::log_destination::kind;
  const kind k = o.dest.type;
  auto only = [&](const char* opt, const char* what) {
    if (opt) this_tool.usage_error(std::string(opt) + " applies to " + what + " only, not to '" + o.dest_text + "'");
  };
  if (k != kind::file) only(file_option, "a FILE");
  // Compression acts on rotated files only: without them it would be
  // accepted and never happen.
  if (o.log.compress != sluice::log_options::compression::none && o.log.max_size == 0)
    this_tool.usage_error("--compress goes with --max-size (without rotation there is nothing to compress)");
  if (o.log.compress != sluice::log_options::compression::none && o.log.keep == 0)
    this_tool.usage_error("--compress goes with a --keep above 0 (--keep 0 keeps no rotated file to compress)");
  if (k != kind::syslog_tcp && k != kind::syslog_unix) only(syslog_option, "syslog:// and syslog+unix:");
  if (k == kind::file || k == kind::kafka)
    only(message_option, "syslog://, syslog+unix:, syslog+tls://, relp:// and relp+tls://");
  if (k != kind::syslog_tls && k != kind::relp_tls) only(tls_option, "syslog+tls:// and relp+tls://");
  if (k != kind::relp_tcp && k != kind::relp_tls) only(relp_option, "relp:// and relp+tls://");
  if (k != kind::kafka) only(kafka_option, "kafka://");
  if (k == kind::file) only(network_option, "a network DEST (syslog://, syslog+unix:, relp://, kafka://)");
#if !SLUICE_LOG_KAFKA
  if (k == kind::kafka)
    this_tool.usage_error("kafka:// needs Kafka support, and this sluice-log was built without it (build it with "
                "librdkafka: Debian's librdkafka-dev, meson -Dkafka=enabled)");
#endif
  o.syslog.max_message = o.max_message;
  if (k == kind::syslog_tcp || k == kind::syslog_tls) {
    o.syslog.host = o.dest.host;
    o.syslog.port = o.dest.port;
    if (k == kind::syslog_tls) {
#if SLUICE_LOG_TLS
      set_up_tls(o);
#else
      this_tool.usage_error("syslog+tls:// needs TLS, and this sluice-log was built without it (build it with "
                            "OpenSSL: Debian's libssl-dev, meson -Dtls=enabled)");
#endif
    }
  } else if (k == kind::syslog_unix) {
    o.syslog.unix_path = o.dest.file;
  } else if (k == kind::relp_tcp || k == kind::relp_tls) {
    o.relp.host = o.dest.host;
    o.relp.port = o.dest.port;
    o.relp.header = o.syslog.header;
    o.relp.give_up_after = o.syslog.give_up_after;
    o.relp.max_message = o.max_message;
    if (k == kind::relp_tls) {
#if SLUICE_LOG_TLS
      set_up_tls(o);
#else
      this_tool.usage_error("relp+tls:// needs TLS, and this sluice-log was built without it (build it with "
                            "OpenSSL: Debian's libssl-dev, meson -Dtls=enabled)");
#endif
    }
  }
  return o;
}

// "2026-11-30T00:00:00.123456Z ": the date and time are formatted once a
// second, the microseconds for every line.
class clock_stamp {
 public:
  // The stamp of now: the part to the second, and the microseconds.
  std::string_view seconds(long& usec) {
    timespec ts{};
    ::clock_gettime(CLOCK_REALTIME, &ts);
    usec = ts.tv_nsec / 1000;
    if (ts.tv_sec != last_) {
      last_ = ts.tv_sec;
      tm t{};
      ::gmtime_r(&ts.tv_sec, &t);
      len_ = std::strftime(buf_, sizeof buf_, "%Y-%m-%dT%H:%M:%S", &t);
    }
    return {buf_, len_};
  }

 private:
  time_t last_ = -1;
  char buf_[32] = {};
  std::size_t len_ = 0;
};

// The run: standard input, split into lines, into the destination's
// writable, with backpressure; the destination (log_output.h) opens,
// counts and reports.
class log_tool {
 public:
  explicit log_tool(const options& o) : o_(o) {
    if (o.dest.network())
      out_ = std::make_unique<sluice_tools::log_net_output>(this_tool, o.dest, o.dest_text, o.syslog, o.relp,
                                                            o.kafka_config, o.max_message, o.spool);
    else
      out_ = std::make_unique<sluice_tools::log_file_output>(o.dest.file, o.dest_text, o.log);
  }

  int run() {
    auto& loop = sluice::loop::current();
    metrics_ = sluice_tools::start_metrics(this_tool, o_.metrics, "sluice_log", [this] { return out_->metrics(n_); });
    if (metrics_) n_.age.enable(loop);
    // The signals come to the loop: their tasks never run inside a line
    // (see hold_shutdown_signals()).
    const sigset_t old_mask = sluice_tools::hold_shutdown_signals();
    // Each watch takes an fd (an eventfd): with none left, say so and stop.
    std::error_code ec;
    term_ = sluice::on_signal(loop, SIGTERM, [this] { stop_signal(); }, ec);
    if (!ec) int_ = sluice::on_signal(loop, SIGINT, [this] { stop_signal(); }, ec);
    if (!ec) hup_ = sluice::on_signal(loop, SIGHUP, [this] { out_->reopen(); }, ec);
    if (ec) {
      std::fprintf(stderr, "sluice-log: cannot handle signals: %s\n", ec.message().c_str());
      return 1;
    }

    // The worker's thread, and librdkafka's, start with the signals held,
    // and so keep them blocked.
    const bool opened = out_->open();
    ::pthread_sigmask(SIG_SETMASK, &old_mask, nullptr);
    if (!opened) return 1;
    notify_.ready();  // sd_notify under systemd (Type=notify): the output is open
    out().on(sluice::event::error, [this](std::error_code e) { output_failed(e); });
    out().on(sluice::event::drain, [this] {
      if (!waiting_ || !in_ || stopping_) return;
      waiting_ = false;
      in_->resume();
    });

    stdin_.set();
    in_ = sluice::make_fd_readable(STDIN_FILENO, false);
    in_->on(sluice::event::error, [this](std::error_code e) { read_error_ = e; });
    sluice::for_each_line(
        *in_, [this](std::string_view line) { return on_line(line); },
        [this](std::error_code e) { lines_done(e); },
        {.max_line_length = o_.max_line_length});
    loop.run();
    stdin_.restore();
    if (!out_->report(n_, {.finished = finished_, .failed = failed_, .ok_so_far = status_ == 0, .reason = reason_}))
      status_ = 1;
    if (o_.stats) out_->print_stats(n_, o_.json);
    return status_;
  }

 private:
  sluice::writable& out() noexcept { return out_->stream(); }
  bool network() const noexcept { return out_->network(); }

  // One line: one chunk, so that rotation never splits it; to a network
  // DEST, one message, without its newline.
  bool on_line(std::string_view line) {
    if (stopping_) return false;
    n_.age.added(n_.lines, n_.written + n_.unsent);
    ++n_.lines;
    // The counts say what landed: each callback comes once, with the truth.
    auto landed = [this](std::error_code ec) {
      if (!ec) ++n_.written;
      else ++n_.unsent;
      out_->landed();
    };
    const bool net = network();
    bool more;
    if (o_.timestamp) {
      long usec = 0;
      const std::string_view secs = stamp_.seconds(usec);
      more = out().vprint(net ? "{}.{:06}Z {}" : "{}.{:06}Z {}\n", fmt::make_format_args(secs, usec, line), landed);
    } else {
      more = out().vprint(net ? "{}" : "{}\n", fmt::make_format_args(line), landed);
    }
    if (!more && !waiting_ && !out().errored() && !out().destroyed()) {
      // Backpressure: no more input until 'drain'. The rest of the chunk in
      // hand is still split and written (at most a read's worth).
      waiting_ = true;
      in_->pause();
    }
    return true;
  }

  void lines_done(std::error_code ec) {
    // The reading was stopped on purpose, or the file failed; a network DEST
    // that failed still ends its stream, whose callbacks then count the rest.
    if (stopping_ || (failed_ && !network())) return;
    if (ec == sluice::errc::line_too_long) {
      std::fprintf(stderr, "sluice-log: standard input: line %zu is longer than %zu bytes (%s)\n", n_.lines + 1,
                   o_.max_line_length, sluice::code_name(ec).c_str());
      status_ = 1;
    } else if (ec == std::errc::not_enough_memory) {
      // The lines before are written; the rest of the input is not read.
      std::fprintf(stderr, "sluice-log: out of memory at line %zu of standard input\n", n_.lines + 1);
      status_ = 1;
    } else if (ec) {
      std::fprintf(stderr, "sluice-log: standard input: %s\n", (read_error_ ? read_error_ : ec).message().c_str());
      status_ = 1;
    }
    finish_output();
  }

  // SIGTERM, SIGINT: nothing more is read, and what was read is written,
  // as at the end of the input: the stream's read-ahead, then the
  // splitter's unfinished line as a last line; then lines_done() ends the
  // output. Destroying the stream here would drop both: lines already read
  // from the input would be lost although the signal only asked to stop.
  // A network DEST has --grace to take it all; a second signal ends the
  // wait.
  void stop_signal() {
    notify_.stopping();
    if (network() && !finished_) {
      if (grace_timer_ != 0) return give_up("a second signal ended the wait");
      grace_timer_ = sluice::loop::current().set_timeout(o_.grace, [this] {
        grace_timer_ = 0;
        give_up("the receiver did not take them within --grace " + o_.grace_text + " of the signal");
      });
    }
    stop_reading();
  }

  void stop_reading() {
    if (!in_ || input_stopped_ || stopping_ || (failed_ && !network())) return;
    input_stopped_ = true;
    in_->stop();
  }

  // Whatever waits in the network stream is dropped: each callback says so,
  // and counts. The lines read but not yet split are let through too, into
  // the destroyed stream, to be counted the same way.
  void give_up(std::string why) {
    if (gave_up_) return;
    gave_up_ = true;
    if (grace_timer_ != 0) sluice::loop::current().clear_timeout(grace_timer_);
    grace_timer_ = 0;
    if (reason_.empty()) reason_ = std::move(why);
    if (!out().destroyed()) out().destroy();
    release_input();
  }

  // The reading ends where it is, and a paused input flows again: what it
  // holds still comes out, as lines.
  void release_input() {
    stop_reading();
    if (waiting_ && in_ && !in_->destroyed()) {
      waiting_ = false;
      in_->resume();
    }
  }

  void finish_output() {
    stopping_ = true;
    if (in_ && !in_->destroyed()) in_->destroy();
    out().end([this](std::error_code ec) {
      if (ec && !network()) return output_failed(ec);
      if (ec && reason_.empty()) reason_ = ec.message();
      finished_ = !ec;
      quit();
    });
  }

  void output_failed(std::error_code ec) {
    if (failed_) return;
    failed_ = true;
    status_ = 1;
    if (network()) {
      // The stream is destroyed with `ec` (--give-up-after, a Kafka delivery
      // failure): the rest of what was read is counted as not sent, and
      // log_net_output::report() names `ec`.
      reason_ = ec.message();
      give_up(reason_);
      return;
    }
    std::fprintf(stderr, "sluice-log: %s: %s\n", o_.dest_text.c_str(), sluice_tools::file_error(ec).c_str());
    // Nothing more can be written: stop reading too.
    if (in_ && !in_->destroyed()) in_->destroy();
    quit();
  }

  // The signal watches and the grace timer keep the loop running; without
  // them it ends.
  void quit() {
    term_.reset();
    int_.reset();
    hup_.reset();
    if (grace_timer_ != 0) sluice::loop::current().clear_timeout(grace_timer_);
    grace_timer_ = 0;
  }

  const options& o_;
  std::unique_ptr<sluice_tools::log_output> out_;
  std::unique_ptr<sluice::fd_readable> in_;
  sluice::signal_watch term_, int_, hup_;
  sluice::timer_id grace_timer_ = 0;
  clock_stamp stamp_;
  sluice_tools::log_counts n_;
  std::unique_ptr<sluice_tools::metrics_server> metrics_;  // --metrics
  sluice_tools::nonblocking_stdin stdin_;
  int status_ = 0;
  bool waiting_ = false;   // paused until 'drain'
  bool input_stopped_ = false;  // SIGTERM or SIGINT: the input ends where the reading stopped
  bool stopping_ = false;  // end of input, or an error: no more lines
  bool finished_ = false;  // every line is in the file, or sent
  bool failed_ = false;    // the file failed, or the network stream gave up with an error
  bool gave_up_ = false;   // the network stream was destroyed: what it held is dropped
  std::string reason_;     // why messages were not sent
  std::error_code read_error_;
  sluice_tools::systemd::notifier notify_{[this] {
    return std::to_string(n_.lines) + " lines, " + std::to_string(n_.written) + " written, " +
           std::to_string(n_.unsent) + " not sent";
  }};
};

}  // namespace

int main(int argc, char** argv) {
  return this_tool.run(argc, argv, parse_args, [](const options& o) { return log_tool(o).run(); });
}
