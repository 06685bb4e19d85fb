// sluice-log's --help: what it does, every DEST and option, the
// counts, the signals and the exit status.
#pragma once

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
       sluice-log --follow PATH... [--state DIR] [OPTION]... DEST
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

Following files (instead of standard input, which is then not read):
  --follow PATH     read PATH as it grows, as 'tail -F' does, from its start;
                    once or more. Through a rotation by rename (logrotate's
                    'create'): the old file is read to its end and closed
                    once it has not grown for 5 s, then the new PATH is read
                    from its start. Through a copy and truncate (logrotate's
                    'copytruncate'): a file smaller than the position, or
                    whose first bytes changed, is read again from 0, and
                    what was not read yet from the copy (found in PATH's
                    directory by its first bytes). PATH deleted: its file
                    is read to its end, and PATH waited for. A file is
                    known by its device, inode and a fingerprint of its
                    first 256 bytes. A symbolic link as PATH is followed
                    (its target's directory is watched). A directory,
                    FIFO, device or socket as PATH, or FILE DEST itself,
                    is bad usage. Runs until SIGTERM or SIGINT, then exits
                    as at the end of input.
  --state DIR       save each file's position in DIR (made 0700; refused if a
                    symbolic link, another user's or writable by others; one
                    sluice-log a DIR), so that a restart, even after SIGKILL,
                    goes on where the destination's acknowledgements ended
                    (a rotated file is found again in PATH's directory).
                    Saved at most every 200 ms, and at exit, each time
                    written whole, fsynced and renamed into place. A save
                    that fails (a full disk) is said on standard error (at
                    most once every 10 s) and following goes on; the last
                    save stays. Without --state, nothing is resumed: a new
                    run reads each PATH from its start.
  --poll-interval T look at every file each T (default 1s; T as
                    --give-up-after), besides inotify's wake-ups: where
                    inotify says nothing (NFS, FUSE, no inotify) this is how
                    changes are seen
  A last line without its newline is sent as it is once its file has not
  grown for 5 s (its rest, if it comes, is then a line of its own). A line
  longer than --max-line-length ends the run as on standard input.
  'Acknowledged', the point up to which a position is saved: a FILE: written
  (in the kernel); syslog://: in the kernel's socket buffer (plain TCP may
  lose what is in flight); relp://: answered 200 by the receiver; kafka://:
  acknowledged by the broker; with --spool: written into the spool. After a
  SIGKILL, what was sent and not yet saved as acknowledged is sent again:
  at most 200 ms of acknowledged lines plus what was in flight (--window),
  counted as re-read in --stats (an upper bound: see docs/tools.md).

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
                    with --follow, the same line goes on: ', followed F
                            files through R rotations and T truncations,
                            E re-read, P partial lines, S state saves, W
                            state failures' (E: lines a restart read again
                            that the last run had sent, not known
                            acknowledged; P: last lines sent without a
                            newline)
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
                    "spool_failures":W; with --follow, in the same object
                    too: "follow_files":F,"follow_rotations":R,
                    "truncations":T,"reread":E,"partial_lines":P,
                    "state_saves":S,"state_failures":W
  --metrics HOST:PORT
                    serve the counts of --stats, and gauges of what is now
                    (bytes waiting in the stream, the age of the oldest line
                    not yet sent, acknowledged or written; with --spool its
                    bytes and segments; with --follow the files open, the
                    bytes behind their ends not yet read, and how long ago
                    the positions were last saved), as Prometheus metrics:
                    'GET /metrics' on HOST:PORT (port 0: any free one),
                    printed as 'sluice-log: serving metrics on
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
                    (default 4096; librelp's is 128). Each acknowledgement
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
         sluice-log --follow /var/log/app.log --state /var/lib/sluice-log \
                    relp://10.0.0.5:2514
         my-server 2>&1 | sluice-log --app-name my-server syslog://10.0.0.5:514
         my-server 2>&1 | sluice-log --app-name my-server relp://10.0.0.5:2514
         my-server 2>&1 | sluice-log --tls-ca ca.crt --tls-cert me.crt --tls-key me.key \
                            syslog+tls://logs.example.internal:6514
         my-server 2>&1 | sluice-log -X acks=all kafka://k1:9092,k2:9092/logs
)";
