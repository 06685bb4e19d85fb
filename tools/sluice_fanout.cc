// sluice-fanout: sends each line of standard input to every connected
// subscriber, over TCP or a Unix socket, with a policy for the slow ones.
// Standard input is a readable split by for_each_line(); each line is one
// message written to a sluice::fanout, whose subscribers are the sockets a
// net::server accepts. Under pause, the fanout's input fills while a
// subscriber is over its high-water mark, and the reading waits for its
// 'drain'; under drop and disconnect it never does, and each subscriber
// holds at most --max-buffered bytes. TLS subscribers (--listen-tls) are
// the tls::sockets a tls::server makes secure: one joins the fanout only
// once its handshake (and, with --tls-client-ca, its certificate) passed,
// so that one refused never gets a line.
#include <fcntl.h>
#include <getopt.h>
#include <malloc.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "tool.h"
#include "nonblocking_stdin.h"
#include "args.h"
#include "fanout_stats.h"
#include "metrics_server.h"
#include "rate_limited_note.h"
#include "socket_perms.h"
#include "systemd.h"
#include "tls_server_args.h"
#include "sluice/net/server.h"
#include "sluice/sluice.h"
#include "sluice/stream/fanout.h"
#if SLUICE_TOOL_TLS
#include "sluice/tls/server.h"
#endif

namespace {

constexpr const char* usage_text = R"(usage: sluice-fanout --listen ADDR [OPTION]...
       sluice-fanout [--listen ADDR] --listen-tls HOST:PORT... --tls-cert FILE --tls-key FILE [--tls-client-ca FILE] [OPTION]...
Sends each line of standard input to every connected subscriber.

ADDR is HOST:PORT (an IP address or localhost; [::1]:PORT for IPv6; port 0
picks a free port) or unix:PATH. Once listening, sluice-fanout prints
'sluice-fanout: listening on ADDR' on standard error, with the real port.
T is a time: a whole number with ms, s, m or h, up to 24h; a bare number is
seconds (as in sluice-logd and sluice-log).

Options:
  --listen ADDR         where subscribers connect (required, unless
                        --listen-tls is given); also fd:NAME, the sockets
                        systemd passed (see systemd)
  --listen-tls HOST:PORT
                        where subscribers connect over TLS, once or more,
                        beside --listen; needs --tls-cert and --tls-key;
                        printed as 'sluice-fanout: listening on HOST:PORT
                        (TLS)'. A subscriber gets lines once its handshake
                        is done; one whose handshake fails gets none, and
                        is said on standard error with the reason. The
                        handshake must be done within 10 s (or
                        --idle-timeout, when shorter), else it fails
  --tls-cert FILE       the server's certificate (PEM; any intermediate
                        ones after it), for --listen-tls
  --tls-key FILE        its private key (PEM); a warning if its group or
                        others may read it
  --tls-client-ca FILE  require each --listen-tls subscriber to present a
                        certificate that chains to a CA in FILE (PEM); one
                        without, or with another, is cut off in the
                        handshake, before it gets a line
  --policy POLICY       what happens to a subscriber that reads too slowly:
                          pause       everyone waits for it: standard input is
                                      not read while it is over its high-water
                                      mark (the default)
                          drop        it skips whole lines (never part of one)
                                      while it holds --max-buffered bytes, and
                                      before its next line it is told
                                      'sluice-fanout: dropped N lines'
                          disconnect  it is cut off when a line would take it
                                      past --max-buffered bytes (reported as
                                      'sluice-fanout: cut off ADDR: REASON')
  --max-buffered SIZE   drop, disconnect: the most bytes one subscriber may
                        hold unsent (K, M or G suffix, 1024-based; default 1M)
  --write-deadline T    cut off a subscriber whose unsent data has not drained
                        for T (any policy; 0, the default: never):
                        this is what cuts off a subscriber that stops reading
  --idle-timeout T      cut off a subscriber when nothing was sent to it and
                        nothing came from it for T (0, the default: never). A quiet input makes every subscriber
                        idle: use it with an input of steady lines, or with
                        subscribers that send something now and then (read
                        and ignored). It is not needed for one that stops
                        reading while lines wait: --write-deadline is.
  --max-connections N   at most N subscribers at once on each address; one
                        more is closed at once, without a line (0, the
                        default: no limit). On --listen-tls N counts the
                        subscribers whose handshake is done, and at most N
                        more connections may be in their handshake besides:
                        one more cuts off the oldest of them (a failed
                        handshake, 'too many connections in their
                        handshake'), so that connections that never finish
                        a handshake cannot lock a subscriber out. One whose
                        handshake ends while N subscribers are in is closed
                        then, without a line
  --linger T            drop, disconnect: after the end of the input (or the
                        first SIGTERM or SIGINT), the subscribers have T
                        (default 5s) to take what they are
                        owed; then whoever is left is cut off and
                        sluice-fanout exits
  --send-buffer SIZE    set each subscriber socket's kernel send buffer
                        (SO_SNDBUF) to SIZE; by default the kernel sizes it,
                        up to net.ipv4.tcp_wmem's largest (4 MiB here), and
                        a stalled subscriber fills it before --max-buffered
                        and --write-deadline start to count
  --wait-for N          read no input until N subscribers have connected
  --no-drop-notice      drop: do not tell subscribers what they missed
  --max-line-length N   the longest line accepted, in bytes (default 1048576)
  --stats               at exit, print on standard error one line per
                        subscriber and the totals: lines in, lines sent,
                        lines dropped, subscribers cut off (and with
                        --listen-tls, the handshakes refused)
  --json                with --stats: print them as JSON objects, one a line
  --metrics HOST:PORT   serve the totals of --stats, and gauges of what is
                        now (subscribers connected, bytes buffered for
                        them), as Prometheus metrics: 'GET /metrics' on
                        HOST:PORT (port 0: any free one), printed as
                        'sluice-fanout: serving metrics on
                        http://HOST:PORT/metrics'. Read-only; a request over
                        8K or not whole within 10 s is closed (counted). An
                        address that cannot be listened on (a port in use)
                        is bad usage. See docs/tools.md, Metrics.
  --socket-mode MODE    unix:PATH: the socket's permissions, in octal (0 to
                        777, e.g. 660), set before it accepts; by default the
                        umask's (a connect needs write permission)
  --socket-group GROUP  unix:PATH: the socket's group, a name or a number (the
                        process must be root or a member of it)
  -h, --help            show this help

Lines end at "\n" or "\r\n" and are sent with "\n"; a last line without one
gets one. A subscriber gets the lines read while it is connected; what it
sends is read and ignored, and one that ends its sending side (a FIN: socat
or nc with standard input at /dev/null) still gets every line.

A subscriber cut off (disconnect, --write-deadline, --idle-timeout, --linger,
a second signal) may see a partial last line: the kernel already holds part
of it, and TCP cannot take bytes back. Its socket is closed, so it sees the
end (or a reset) right after. Under drop a subscriber that stays connected
never gets part of a line.

End of input, SIGTERM and SIGINT: nothing more is read; every subscriber gets
every line it is owed under its policy, then its socket is ended (FIN) and
closed, and sluice-fanout exits 0. Under drop and disconnect this takes at
most --linger: a subscriber that does not read is then cut off (reported as
'sluice-fanout: cut off ADDR: still owed lines MS ms after the end of the
input'). Under pause a subscriber that never reads holds this up (pause
means waiting for it): --write-deadline bounds it. Under every policy a
second SIGTERM or SIGINT cuts the remaining subscribers off at once.

systemd: --listen and --listen-tls take fd:NAME, the sockets a socket unit
passes under FileDescriptorName=NAME (LISTEN_FDS), each served (printed as
'listening on fd:NAME (ADDR)'); a NAME not passed, or a socket that is not a
listening stream socket (Accept=yes), is bad usage. With NOTIFY_SOCKET set
(Type=notify), sluice-fanout says READY=1 once every address listens,
STATUS= with its counts (every 2 s when they change), STOPPING=1 when it
stops (the end of the input, SIGTERM), and WATCHDOG=1 every
WATCHDOG_USEC/2 when WatchdogSec= is set. Both need libsystemd at build
time.

A unix: path that is a socket nobody accepts on (left by a sluice-fanout that
was killed) is removed and listened on again; anything else there (a file, a
live listener) is an error.

Exit status: 0 at the end of the input or on SIGTERM/SIGINT; 1 when ADDR
cannot be listened on, standard input cannot be read, or a line is too long;
2 on bad usage. A missing or unreadable --tls-* file, one that is not a
regular file (a FIFO, a device: 'not a regular file'), or one OpenSSL
cannot load (not PEM, a key that does not match the certificate), is bad
usage.

Example: tail -F app.log | sluice-fanout --listen 127.0.0.1:9000 --policy drop --stats
         tail -F app.log | sluice-fanout --listen-tls 0.0.0.0:9443 --tls-cert fanout.crt --tls-key fanout.key --tls-client-ca ca.crt
)";

constexpr sluice_tools::tool this_tool{"sluice-fanout", usage_text};

struct options {
  std::string listen;  // empty: --listen-tls only
  bool unix_socket = false;
  std::string host;  // TCP
  std::uint16_t port = 0;
  sluice::slow_policy policy = sluice::slow_policy::pause;
  std::uint64_t max_buffered = 1024 * 1024;
  std::uint64_t write_deadline_ms = 0;
  std::uint64_t wait_for = 0;
  std::uint64_t send_buffer = 0;  // 0: the kernel's
  std::uint64_t idle_timeout_ms = 0;
  std::uint64_t max_connections = 0;  // 0: no limit
  std::uint64_t linger_ms = 5000;
  bool drop_notice = true;
  bool stats = false;
  bool json = false;
  std::size_t max_line_length = sluice::line_options{}.max_line_length;
  std::optional<mode_t> socket_mode;
  std::optional<gid_t> socket_group;
  sluice_tools::tls_server_args tls;  // --listen-tls, --tls-*
  sluice_tools::metrics_args metrics;  // --metrics
};

void parse_listen(const std::string& a, options& o) {
  if (sluice_tools::systemd::is_passed(a)) return sluice_tools::systemd::check_passed(this_tool, "--listen", a);
  if (a.rfind("unix:", 0) == 0) {
    if (a.size() == 5) this_tool.usage_error("--listen unix: wants a path");
    o.unix_socket = true;
    o.host = a.substr(5);
    return;
  }
  std::string why;
  if (!sluice_tools::parse_host_port("--listen", a, o.host, o.port, 0, why)) this_tool.usage_error(why);
}

options parse_args(int argc, char** argv) {
  options o;
  enum {
    listen = 256,
    policy,
    max_buffered,
    write_deadline,
    send_buffer,
    wait_for,
    no_drop_notice,
    max_line_length,
    stats,
    json,
    socket_mode,
    socket_group,
    idle_timeout,
    max_connections,
    linger,
    listen_tls,
    tls_cert,
    tls_key,
    tls_client_ca,
    metrics
  };
  static const option long_options[] = {
      {"listen", required_argument, nullptr, listen},
      {"policy", required_argument, nullptr, policy},
      {"max-buffered", required_argument, nullptr, max_buffered},
      {"write-deadline", required_argument, nullptr, write_deadline},
      {"send-buffer", required_argument, nullptr, send_buffer},
      {"wait-for", required_argument, nullptr, wait_for},
      {"no-drop-notice", no_argument, nullptr, no_drop_notice},
      {"max-line-length", required_argument, nullptr, max_line_length},
      {"stats", no_argument, nullptr, stats},
      {"json", no_argument, nullptr, json},
      {"socket-mode", required_argument, nullptr, socket_mode},
      {"socket-group", required_argument, nullptr, socket_group},
      {"idle-timeout", required_argument, nullptr, idle_timeout},
      {"max-connections", required_argument, nullptr, max_connections},
      {"linger", required_argument, nullptr, linger},
      {"listen-tls", required_argument, nullptr, listen_tls},
      {"tls-cert", required_argument, nullptr, tls_cert},
      {"tls-key", required_argument, nullptr, tls_key},
      {"tls-client-ca", required_argument, nullptr, tls_client_ca},
      {"metrics", required_argument, nullptr, metrics},
      {"help", no_argument, nullptr, 'h'},
      {nullptr, 0, nullptr, 0},
  };
  opterr = 0;  // the messages below say more
  int c;
  std::uint64_t v = 0;
  while ((c = ::getopt_long(argc, argv, ":h", long_options, nullptr)) != -1) {
    switch (c) {
      case listen:
        o.listen = optarg;
        parse_listen(o.listen, o);
        break;
      case metrics: sluice_tools::add_metrics_arg(this_tool, o.metrics, optarg); break;
      case policy: {
        const std::string p = optarg;
        if (p == "pause") o.policy = sluice::slow_policy::pause;
        else if (p == "drop") o.policy = sluice::slow_policy::drop;
        else if (p == "disconnect") o.policy = sluice::slow_policy::disconnect;
        else this_tool.usage_error("--policy wants pause, drop or disconnect, got '" + p + "'");
        break;
      }
      case max_buffered:
        if (!sluice_tools::parse_size(optarg, true, 1ull << 40, v) || v < 1)
          this_tool.usage_error(std::string("--max-buffered wants a number of bytes from 1 to 1T, with K, M or G or none, got '") +
                      optarg + "'");
        o.max_buffered = v;
        break;
      case write_deadline:
      case idle_timeout:
      case linger: {
        // args.h's durations, as sluice-logd's and sluice-log's: a bare
        // number is seconds (it once was milliseconds here alone).
        std::chrono::milliseconds t{};
        if (!sluice_tools::parse_duration(optarg, t))
          this_tool.usage_error(std::string(c == linger ? "--linger" : c == idle_timeout ? "--idle-timeout" : "--write-deadline") +
                                " wants a time from 0 to 24h, e.g. 30s, 500ms or 10m (a bare number: seconds), got '" +
                                optarg + "'");
        (c == linger ? o.linger_ms : c == idle_timeout ? o.idle_timeout_ms : o.write_deadline_ms) =
            static_cast<std::uint64_t>(t.count());
        break;
      }
      case send_buffer:
        if (!sluice_tools::parse_size(optarg, true, 1ull << 30, v) || v < 1)
          this_tool.usage_error(std::string("--send-buffer wants a number of bytes from 1 to 1G, with K, M or G or none, got '") +
                      optarg + "'");
        o.send_buffer = v;
        break;
      case wait_for:
        if (!sluice_tools::parse_size(optarg, false, 100'000, v))
          this_tool.usage_error(std::string("--wait-for wants a whole number from 0 to 100000, got '") + optarg + "'");
        o.wait_for = v;
        break;
      case no_drop_notice: o.drop_notice = false; break;
      case max_line_length:
        if (!sluice_tools::parse_size(optarg, false, 1ull << 30, v) || v < 1)
          this_tool.usage_error(std::string("--max-line-length wants a whole number of bytes from 1 to 1073741824, got '") +
                      optarg + "'");
        o.max_line_length = v;
        break;
      case max_connections:
        if (!sluice_tools::parse_size(optarg, false, 1'000'000, v))
          this_tool.usage_error(std::string("--max-connections wants a whole number from 0 to 1000000, got '") + optarg + "'");
        o.max_connections = v;
        break;
      case stats: o.stats = true; break;
      case json: o.json = true; break;
      case socket_mode:
        if (!(o.socket_mode = sluice_tools::parse_socket_mode(optarg)))
          this_tool.usage_error(std::string("--socket-mode wants an octal mode from 0 to 777, got '") + optarg + "'");
        break;
      case socket_group:
        if (!(o.socket_group = sluice_tools::parse_socket_group(optarg)))
          this_tool.usage_error(std::string("--socket-group wants a group name or number, got '") + optarg + "'");
        break;
      case listen_tls: sluice_tools::add_listen_tls(this_tool, o.tls, optarg); break;
      case tls_cert: o.tls.cert = optarg; break;
      case tls_key: o.tls.key = optarg; break;
      case tls_client_ca: o.tls.client_ca = optarg; break;
      case 'h':
        this_tool.help();
      default:
        this_tool.bad_option(c, argv, ":h");
    }
  }
  if (optind != argc) this_tool.usage_error(std::string("unexpected argument '") + argv[optind] + "'");
  if (o.listen.empty() && !o.tls.enabled()) this_tool.usage_error("--listen ADDR (or --listen-tls HOST:PORT) is required");
  sluice_tools::check_tls_server_args(this_tool, o.tls);
  if (o.json && !o.stats) this_tool.usage_error("--json goes with --stats");
  if ((o.socket_mode || o.socket_group) && !o.unix_socket)
    this_tool.usage_error("--socket-mode and --socket-group go with --listen unix:PATH");
  return o;
}

std::string describe(const sluice::net::address_info& a) {
  if (a.family == "unix") return "unix:" + a.address;
  if (a.family == "IPv6") return "[" + a.address + "]:" + std::to_string(a.port);
  return a.address + ":" + std::to_string(a.port);
}

class fanout_tool {
 public:
  explicit fanout_tool(const options& o)
      : o_(o),
        hub_({.policy = o.policy,
              .max_buffered = static_cast<std::size_t>(o.max_buffered),
              .drop_notice = o.drop_notice ? [](std::uint64_t n) {
                return "sluice-fanout: dropped " + std::to_string(n) + " lines\n";
              } : std::function<std::string(std::uint64_t)>{},
              .input = {.high_water_mark = 64 * 1024}}) {}

  int run() {
    auto& loop = sluice::loop::current();
    metrics_ = sluice_tools::start_metrics(this_tool, o_.metrics, "sluice_fanout", [this] { return stats(); });
    // Under the watches lies a handler that does nothing: once quit() has
    // reset them (so that the loop can end), a late signal is ignored
    // instead of killing a run that has delivered everything.
    struct sigaction ignore_quietly {};
    ignore_quietly.sa_handler = [](int) {};
    ignore_quietly.sa_flags = SA_RESTART;
    sigemptyset(&ignore_quietly.sa_mask);
    for (int sig : {SIGTERM, SIGINT}) ::sigaction(sig, &ignore_quietly, nullptr);
    // Each watch takes an fd (an eventfd): with none left, say so and stop.
    std::error_code ec;
    term_ = sluice::on_signal(loop, SIGTERM, [this] { on_stop_signal(); }, ec);
    if (!ec) int_ = sluice::on_signal(loop, SIGINT, [this] { on_stop_signal(); }, ec);
    if (ec) {
      std::fprintf(stderr, "sluice-fanout: cannot handle signals: %s\n", ec.message().c_str());
      return 1;
    }

    hub_.on_leave([this](sluice::writable& w, const sluice::subscriber_stats& st) { left(w, st); });
    hub_.input().on(sluice::event::drain, [this] {
      if (!waiting_ || !in_ || stopping_) return;
      waiting_ = false;
      in_->resume();
    });

    // The TLS servers first: a key or certificate OpenSSL cannot load is
    // bad usage, said before anything listens.
#if SLUICE_TOOL_TLS
    if (o_.tls.enabled() && !make_tls_servers()) return 2;
#endif
    if (!o_.listen.empty())
      for (const auto& [addr, fd] : sluice_tools::systemd::listeners({o_.listen})) listen_plain(fd);
#if SLUICE_TOOL_TLS
    for (std::size_t i = 0; i < tls_servers_.size(); ++i) {
      const auto& [addr, fd] = tls_where_[i];
      std::string host, why;
      std::uint16_t port = 0;
      if (fd >= 0) tls_servers_[i]->listen(sluice::net::handle{fd});
      else if (sluice_tools::parse_host_port("--listen-tls", addr, host, port, 0, why)) tls_servers_[i]->listen(port, host);
    }
#endif
    loop.run();
    stdin_.restore();
    if (o_.stats) print_totals();
    return status_;
  }

 private:
  // One subscriber: what the lines are written to (the socket, or the
  // tls::socket's plaintext), and its name.
  struct subscriber {
    sluice::duplex* stream;
    std::string peer;
  };

  static sluice::net::server_options server_options(const options& o) {
    sluice::net::server_options so;
    so.connection.write_deadline = std::chrono::milliseconds(o.write_deadline_ms);
    so.unix_mode = o.socket_mode;
    so.unix_group = o.socket_group;
    // A subscriber that ends its sending side (standard input at /dev/null)
    // still reads: our side stays open for its lines.
    so.connection.allow_half_open = true;
    if (o.max_connections != 0) so.max_connections = static_cast<std::size_t>(o.max_connections);
    return so;
  }

  // `fd`: a socket passed by systemd (--listen fd:NAME), or -1.
  void listen_plain(int fd) {
    sluice::net::server* s = servers_plain_.emplace_back(std::make_unique<sluice::net::server>(server_options(o_))).get();
    watch_server(*s, o_.listen, [s, fd, this] {
      return fd >= 0 ? sluice_tools::systemd::describe_passed(o_.listen, *s->address()) : describe(*s->address());
    });
    s->on_connection([this](sluice::net::socket& sock) { subscribe(sock, sock); });
    if (fd >= 0)
      s->listen(sluice::net::handle{fd});
    else if (o_.unix_socket)
      s->listen(std::string_view(o_.host));
    else
      s->listen(o_.port, o_.host);
  }

  // What every listener shares: 'listening' said (reading starts once all
  // listen), an error before it ends the run, one after it is an accept
  // error (the server pauses accepting and goes on), and the run ends once
  // every listener has closed.
  template <class Describe>
  void watch_server(sluice::emitter& s, const std::string& addr, Describe where) {
    ++servers_;
    auto up = std::make_shared<bool>(false);
    s.on(sluice::event::listening, [this, up, where] {
      *up = true;
      std::fprintf(stderr, "sluice-fanout: listening on %s\n", where().c_str());
      if (++servers_up_ < servers_) return;
      listening_ = true;
      notify_.ready();
      if (o_.wait_for == 0) start_reading();
    });
    s.on(sluice::event::error, [this, up, addr](std::error_code ec) {
      if (!*up) {
        std::fprintf(stderr, "sluice-fanout: %s: %s\n", addr.c_str(), ec.message().c_str());
        status_ = 1;
        shut_down();
        return;
      }
      std::fprintf(stderr, "sluice-fanout: accepting: %s\n", ec.message().c_str());
    });
    s.on(sluice::event::close, [this] {
      if (++servers_closed_ == servers_) quit();
    });
  }

#if SLUICE_TOOL_TLS
  // One tls::server for each --listen-tls address. False: the key or a
  // certificate cannot be loaded, said with OpenSSL's reason.
  bool make_tls_servers() {
    const sluice::tls::server_options to = sluice_tools::make_tls_server_options(
        o_.tls, server_options(o_), std::chrono::milliseconds(o_.idle_timeout_ms));
    for (const auto& [addr, fd] : sluice_tools::systemd::listeners(o_.tls.listen)) {
      std::unique_ptr<sluice::tls::server> srv;
      try {
        srv = std::make_unique<sluice::tls::server>(to);
      } catch (const sluice::stream_error& e) {
        std::fprintf(stderr, "sluice-fanout: --tls-cert %s, --tls-key %s: %s\n", o_.tls.cert.c_str(),
                     o_.tls.key.c_str(), e.what());
        return false;
      }
      sluice::tls::server* s = srv.get();
      watch_server(*s, addr, [s, addr, fd] {
        return (fd >= 0 ? sluice_tools::systemd::describe_passed(addr, *s->address()) : describe(*s->address())) + " (TLS)";
      });
      // A connection in its handshake is no subscriber yet: kept here so
      // that the end of the input does not wait for its handshake timeout.
      s->tcp().on_connection([this](sluice::net::socket& tcp) {
        if (stopping_) return void(tcp.destroy());
        handshaking_.insert(&tcp);
        tcp.on(sluice::event::close, [this, t = &tcp] { handshaking_.erase(t); });
      });
      s->on(sluice::event::tls_client_error, [this](const sluice::event_arg& a) {
        if (stopping_) return;  // cut off by the end of the input, not refused
        ++tls_refused_;
        auto* ts = static_cast<sluice::tls::socket*>(a.source);
        std::string more;
        if (tls_note_.due(more))
          std::fprintf(stderr, "sluice-fanout: %s: TLS handshake failed: %s; connection closed, no line sent%s\n",
                       describe(ts->tcp().remote()).c_str(), a.error.message().c_str(), more.c_str());
      });
      s->on_secure_connection([this](sluice::tls::socket& ts) {
        handshaking_.erase(&ts.tcp());
        subscribe(ts, ts.tcp());
      });
      tls_servers_.push_back(std::move(srv));
      tls_where_.emplace_back(addr, fd);
    }
    return true;
  }
#endif

  // Stops every listener (once: each says 'close' once), and cuts off the
  // connections still in their TLS handshake.
  void close_servers() {
    if (servers_closing_) return;
    servers_closing_ = true;
    for (auto& s : servers_plain_) s->close();
#if SLUICE_TOOL_TLS
    for (auto& s : tls_servers_) s->close();
    std::vector<sluice::net::socket*> hs(handshaking_.begin(), handshaking_.end());
    for (auto* t : hs) t->destroy();
#endif
    if (servers_ == 0) quit();
  }

  // `s` is what the lines go to; `tcp` the socket below it (`s` itself,
  // or a tls::socket's TCP socket).
  void subscribe(sluice::duplex& s, sluice::net::socket& tcp) {
    if (stopping_) {  // the lines are over: nothing is owed to it
      if (servers_closing_) return void(s.destroy());
      track(s, tcp);
      s.end();
      return;
    }
    if (o_.send_buffer != 0) {
      const int size = static_cast<int>(o_.send_buffer);
      ::setsockopt(tcp.fd(), SOL_SOCKET, SO_SNDBUF, &size, sizeof size);
    }
    s.on(sluice::event::data, [](std::string_view) {});  // what subscribers send is ignored
    s.on(sluice::event::error, [peer = describe(tcp.remote())](std::error_code ec) {
      // A subscriber that goes away is no news; one cut off is.
      if (ec == sluice::errc::buffer_full || ec == sluice::errc::write_timeout)
        std::fprintf(stderr, "sluice-fanout: cut off %s: %s (%s)\n", peer.c_str(), ec.message().c_str(),
                     sluice::code_name(ec).c_str());
    });
    if (o_.idle_timeout_ms != 0) {
      tcp.set_timeout(std::chrono::milliseconds(o_.idle_timeout_ms));
      tcp.on(sluice::event::timeout, [this, &s] {
        cut_off(s, "nothing sent or received for " + std::to_string(o_.idle_timeout_ms) + " ms (--idle-timeout)");
      });
    }
    // The hub's 'close' listener goes first, so that left() still finds it
    // in subs_.
    hub_.add(s);
    track(s, tcp);
    ++subscribed_;
    if (!reading_ && listening_ && subscribed_ >= o_.wait_for) start_reading();
  }

  void track(sluice::duplex& s, sluice::net::socket& tcp) {
    subs_.emplace(&s, subscriber{&s, describe(tcp.remote())});
    s.on(sluice::event::close, [this, &s] { subs_.erase(&s); });
  }

  void start_reading() {
    if (reading_ || stopping_) return;
    reading_ = true;
    stdin_.set();
    in_ = sluice::make_fd_readable(STDIN_FILENO, false);
    in_->on(sluice::event::error, [this](std::error_code e) { read_error_ = e; });
    sluice::for_each_line(
        *in_, [this](std::string_view line) { return on_line(line); },
        [this](std::error_code e) { lines_done(e); }, {.max_line_length = o_.max_line_length});
  }

  bool on_line(std::string_view line) {
    if (stopping_) return false;
    if (!hub_.input().vprint("{}\n", fmt::make_format_args(line)) && !waiting_) {
      // pause: a subscriber is behind; no more input until the hub drains.
      waiting_ = true;
      in_->pause();
    }
    return true;
  }

  void lines_done(std::error_code ec) {
    if (stopping_) return;
    if (ec == sluice::errc::line_too_long) {
      std::fprintf(stderr, "sluice-fanout: standard input: line %llu is longer than %zu bytes (%s)\n",
                   static_cast<unsigned long long>(hub_.messages_in() + 1), o_.max_line_length,
                   sluice::code_name(ec).c_str());
      status_ = 1;
    } else if (ec) {
      std::fprintf(stderr, "sluice-fanout: standard input: %s\n", (read_error_ ? read_error_ : ec).message().c_str());
      status_ = 1;
    }
    shut_down();
  }

  // SIGTERM, SIGINT: nothing more is read, and what was read goes out, as
  // at the end of the input (fd_source::stop() keeps the read-ahead and the
  // unfinished last line; lines_done() then shuts down). A second signal
  // cuts off whoever still holds the shutdown up.
  void on_stop_signal() {
    if (++signals_ == 1) {
      if (in_ && !stopping_) {
        in_->stop();
        return;
      }
      return shut_down();
    }
    shut_down();
    destroy_subscribers();
  }

  void destroy_subscribers() {
    std::vector<sluice::duplex*> left;
    for (auto& [w, sub] : subs_) left.push_back(sub.stream);
    for (auto* s : left) s->destroy();
  }

  // No more lines: each subscriber gets what it is owed and is ended; once
  // all have finished, the servers close, and with them the loop's last
  // work. A connection still in its TLS handshake is owed nothing: it is
  // cut off now.
  void shut_down() {
    if (stopping_) return;
    stopping_ = true;
    notify_.stopping();
    if (in_ && !in_->destroyed()) in_->destroy();
#if SLUICE_TOOL_TLS
    std::vector<sluice::net::socket*> hs(handshaking_.begin(), handshaking_.end());
    for (auto* t : hs) t->destroy();
#endif
    // drop, disconnect: nobody is waited for past --linger (pause waits, by
    // definition, for its slowest subscriber).
    if (o_.policy != sluice::slow_policy::pause)
      linger_timer_ = sluice::loop::current().set_timeout(std::chrono::milliseconds(o_.linger_ms), [this] {
        linger_timer_ = 0;
        std::vector<sluice::duplex*> left;
        for (auto& [w, sub] : subs_) left.push_back(sub.stream);
        for (auto* s : left)
          cut_off(*s, "still owed lines " + std::to_string(o_.linger_ms) + " ms after the end of the input (--linger)");
      });
    hub_.input().end([this](std::error_code) {
      // Every subscriber has its lines and our FIN: nothing is owed to the
      // ones that keep their side open.
      destroy_subscribers();
      close_servers();
    });
    if (!listening_) close_servers();
  }

  void quit() {
    term_.reset();
    int_.reset();
    if (linger_timer_ != 0) sluice::loop::current().clear_timeout(linger_timer_);
    if (trim_timer_ != 0) sluice::loop::current().clear_timeout(trim_timer_);
    linger_timer_ = trim_timer_ = 0;
  }

  // What a subscriber held (up to --max-buffered of lines, in many small
  // blocks) is free once it leaves, but malloc keeps freed heap pages: give
  // them back, once for a burst of departures.
  void trim_soon() {
    if (trim_timer_ != 0 || stopping_) return;
    trim_timer_ = sluice::loop::current().set_timeout(std::chrono::milliseconds(100), [this] {
      trim_timer_ = 0;
      ::malloc_trim(0);
    });
  }

  std::string peer_of(const sluice::writable& w) const {
    const auto it = subs_.find(&w);
    return it == subs_.end() ? "?" : it->second.peer;
  }

  // Cut off by this tool (--idle-timeout, --linger): reported and counted
  // as the hub's own cut-offs are.
  void cut_off(sluice::duplex& s, const std::string& why) {
    if (s.destroyed()) return;
    std::fprintf(stderr, "sluice-fanout: cut off %s: %s\n", peer_of(s).c_str(), why.c_str());
    cut_here_.insert(&s);
    ++cut_here_count_;
    s.destroy();
  }

  void left(sluice::writable& w, const sluice::subscriber_stats& st) {
    const std::string who = peer_of(w);
    const bool cut = cut_here_.erase(&w) != 0 || st.cut_off;
    trim_soon();
    if (!o_.stats) return;
    if (o_.json)
      std::fprintf(stderr, "{\"subscriber\":\"%s\",\"lines_sent\":%llu,\"lines_dropped\":%llu,\"cut_off\":%s}\n",
                   who.c_str(), static_cast<unsigned long long>(st.messages_sent),
                   static_cast<unsigned long long>(st.messages_dropped), cut ? "true" : "false");
    else
      std::fprintf(stderr, "sluice-fanout: subscriber %s: %llu lines sent, %llu dropped%s\n", who.c_str(),
                   static_cast<unsigned long long>(st.messages_sent),
                   static_cast<unsigned long long>(st.messages_dropped), cut ? ", cut off" : "");
  }

  void print_totals() const { sluice_tools::print_stats("sluice-fanout", stats(), o_.json); }

  // The one table of --stats and --metrics (fanout_stats.h); with
  // --listen-tls it also counts the handshakes refused.
  sluice_tools::stat_table stats() const {
    std::uint64_t buffered = 0;
    for (const auto& [w, sub] : subs_) buffered += sub.stream->writable_length();
    return sluice_tools::fanout_stats({hub_.messages_in(), hub_.messages_sent(), hub_.messages_dropped(), subscribed_,
                                       hub_.cut_off() + cut_here_count_, sluice::to_string(o_.policy),
                                       o_.tls.enabled(), tls_refused_, subs_.size(), buffered});
  }

  const options& o_;
  sluice::fanout hub_;
  std::vector<std::unique_ptr<sluice::net::server>> servers_plain_;  // --listen: one, or each socket of fd:NAME
#if SLUICE_TOOL_TLS
  std::vector<std::unique_ptr<sluice::tls::server>> tls_servers_;  // --listen-tls
  std::vector<std::pair<std::string, int>> tls_where_;  // each one's address, and fd when passed (else -1)
  std::unordered_set<sluice::net::socket*> handshaking_;  // TLS connections not yet secure
#endif
  sluice_tools::rate_limited_note tls_note_;
  std::unique_ptr<sluice::fd_readable> in_;
  std::unordered_map<const sluice::writable*, subscriber> subs_;  // until their 'close'
  std::unordered_set<const sluice::writable*> cut_here_;  // by cut_off(), until they leave
  std::uint64_t cut_here_count_ = 0;
  std::uint64_t tls_refused_ = 0;  // TLS handshakes that failed
  sluice::timer_id linger_timer_ = 0;
  sluice::timer_id trim_timer_ = 0;
  sluice::signal_watch term_, int_;
  std::size_t subscribed_ = 0;
  std::size_t servers_ = 0, servers_up_ = 0, servers_closed_ = 0;  // listeners: all, listening, closed
  sluice_tools::nonblocking_stdin stdin_;
  int status_ = 0;
  int signals_ = 0;  // SIGTERM and SIGINT received
  std::unique_ptr<sluice_tools::metrics_server> metrics_;  // --metrics
  bool listening_ = false;  // every listener listens
  bool reading_ = false;
  bool waiting_ = false;   // paused until the hub's 'drain'
  bool stopping_ = false;  // end of input, a signal or an error: no more lines
  bool servers_closing_ = false;
  std::error_code read_error_;
  sluice_tools::systemd::notifier notify_{[this] {
    return std::to_string(hub_.messages_in()) + " lines in, " + std::to_string(hub_.messages_sent()) + " sent, " +
           std::to_string(hub_.messages_dropped()) + " dropped; " + std::to_string(subs_.size()) + " subscribers";
  }};
};

}  // namespace

int main(int argc, char** argv) {
  return this_tool.run(argc, argv, parse_args, [](const options& o) { return fanout_tool(o).run(); });
}
