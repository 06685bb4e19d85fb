// sluice-logd: receives syslog messages from many senders (TCP and Unix
// stream sockets, net::server) and appends each as one line to a log file,
// with sluice-log's rotation and fsync (a file_worker and its writable).
// Backpressure runs end to end: while the file's writable is past its
// high-water mark every connection is paused, so the kernel's buffers fill
// and TCP holds the senders back.
#include <getopt.h>
#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "close_stdout.h"
#include "log_args.h"
#include "shutdown_signals.h"
#include "sluice/sluice.h"

namespace {

constexpr const char* usage_text = R"(usage: sluice-logd --listen ADDR [--listen ADDR]... [OPTION]... FILE
Receives syslog messages over TCP and Unix stream sockets and appends each
as one line to FILE, rotating it by size, like rsyslog's imptcp and omfile.

Options:
  --listen ADDR     where to accept senders, once or more: HOST:PORT (an IP
                    address or localhost; port 0 picks a free port) or
                    unix:PATH. Each address is printed on standard error as
                    'sluice-logd: listening on ADDR' once it listens.
  --framing MODE    auto (the default): each connection's first byte tells,
                    a digit for octet counting (RFC 6587 'LEN SP MSG'), '<'
                    for LF framing; octet: octet counting only; lf: LF only
  --max-message SIZE
                    the longest message taken (default 64K); a longer one is
                    a malformed frame
  --max-size SIZE   rotate FILE before a message that would take it past
                    SIZE bytes (K, M or G suffixes, 1024-based; 0, the
                    default: never), as sluice-log does
  --keep N          rotated files to keep (default 5)
  --fsync POLICY    never, end, bytes=SIZE or ms=T, as sluice-log's --fsync
  --stats           print each connection's counts when it closes
                    ('sluice-logd: PEER: N messages, B bytes') and the totals
                    at exit ('sluice-logd: N messages, B bytes, C connections,
                    M malformed, R rotations, H reopens')
  --json            with --stats: each as one JSON object
  -h, --help        show this help

Lines: each message is written as one line, a LF inside it written as the
two characters '\n' and a backslash as '\\', so that a line is always one
message and the escaping can be undone.

A malformed frame (a bad length, a message longer than --max-message, a
first byte that is neither a digit nor '<') closes that connection, with
the reason on standard error; the messages before it are written, and other
connections go on. A sender that disconnects mid-frame loses that frame.

FILE is never followed if it is a symbolic link, at start or when it is
opened again (rotation, SIGHUP): that is an error ('sluice-logd: FILE: a
symbolic link: refusing to follow it (ELOOP)'), as in sluice-log.

Signals: SIGHUP closes and reopens FILE (after an external rename).
SIGTERM and SIGINT stop accepting and reading: every message already read
is written, then sluice-logd exits 0.

Writing waits for the disk: while FILE cannot keep up, no connection is
read, so the senders are held back by TCP and memory stays bounded.

Exit status: 0 after SIGTERM/SIGINT with every message read in FILE; 1 when
FILE cannot be opened or written, or an address cannot be listened on; 2 on
bad usage.

Example: sluice-logd --listen 127.0.0.1:6514 --listen unix:/run/app-log.sock --max-size 100M app.log
)";

[[noreturn]] void usage_error(const std::string& msg) {
  std::fprintf(stderr, "sluice-logd: %s\nTry 'sluice-logd --help' for more information.\n", msg.c_str());
  std::exit(2);
}

struct options {
  std::vector<std::string> listen;
  sluice::syslog_frame_reader::mode framing = sluice::syslog_frame_reader::mode::automatic;
  std::size_t max_message = sluice_tools::default_max_message;
  std::string file;
  sluice::log_options log;
  bool stats = false;
  bool json = false;
};

options parse_args(int argc, char** argv) {
  options o;
  enum { listen = 256, framing, max_message, max_size, keep, fsync, stats, json };
  static const option long_options[] = {
      {"listen", required_argument, nullptr, listen},     {"framing", required_argument, nullptr, framing},
      {"max-message", required_argument, nullptr, max_message},
      {"max-size", required_argument, nullptr, max_size}, {"keep", required_argument, nullptr, keep},
      {"fsync", required_argument, nullptr, fsync},       {"stats", no_argument, nullptr, stats},
      {"json", no_argument, nullptr, json},               {"help", no_argument, nullptr, 'h'},
      {nullptr, 0, nullptr, 0},
  };
  opterr = 0;
  int c;
  std::uint64_t v = 0;
  while ((c = ::getopt_long(argc, argv, ":h", long_options, nullptr)) != -1) {
    const std::string arg = optarg ? optarg : "";
    switch (c) {
      case listen:
        if (arg.rfind("unix:", 0) == 0 ? arg.size() == 5 : arg.rfind(':') == std::string::npos)
          usage_error("--listen wants HOST:PORT or unix:PATH, got '" + arg + "'");
        o.listen.push_back(arg);
        break;
      case framing:
        if (arg == "auto") o.framing = sluice::syslog_frame_reader::mode::automatic;
        else if (arg == "octet") o.framing = sluice::syslog_frame_reader::mode::octet_counting;
        else if (arg == "lf") o.framing = sluice::syslog_frame_reader::mode::lf;
        else usage_error("--framing wants auto, octet or lf, got '" + arg + "'");
        break;
      case max_message:
        if (!sluice_tools::parse_size(optarg, true, 1u << 30, v) || v < 1)
          usage_error("--max-message wants a number of bytes from 1 to 1G, got '" + arg + "'");
        o.max_message = static_cast<std::size_t>(v);
        break;
      case max_size:
        if (!sluice_tools::parse_size(optarg, true, UINT64_MAX >> 1, v))
          usage_error("--max-size wants a number of bytes, with K, M or G or none, got '" + arg + "'");
        o.log.max_size = v;
        break;
      case keep:
        if (!sluice_tools::parse_size(optarg, false, 100'000, v))
          usage_error("--keep wants a whole number from 0 to 100000, got '" + arg + "'");
        o.log.keep = static_cast<unsigned>(v);
        break;
      case fsync:
        if (!sluice_tools::parse_fsync(arg, o.log))
          usage_error("--fsync wants never, end, bytes=SIZE or ms=T (1 to 86400000), got '" + arg + "'");
        break;
      case stats: o.stats = true; break;
      case json: o.json = true; break;
      case 'h':
        std::fputs(usage_text, stdout);
        std::exit(0);
      case ':':
        usage_error(std::string("option '") + argv[optind - 1] + "' needs a value");
      default:
        usage_error(std::string("unknown option '") + argv[optind - 1] + "'");
    }
  }
  if (o.json && !o.stats) usage_error("--json goes with --stats");
  if (o.listen.empty()) usage_error("missing --listen ADDR");
  if (optind == argc) usage_error("missing FILE");
  if (argc - optind > 1) usage_error(std::string("one FILE only, got also '") + argv[optind + 1] + "'");
  o.file = argv[optind];
  if (o.file.empty()) usage_error("FILE is empty");
  return o;
}

// One sender's connection.
struct connection {
  sluice::net::socket* sock;
  sluice::syslog_frame_reader frames;
  std::string peer;
  std::size_t messages = 0;
  std::size_t bytes = 0;
};

class logd {
 public:
  explicit logd(const options& o) : o_(o) {}

  int run() {
    auto& loop = sluice::loop::current();
    // As in sluice-log: the signals come to the loop, and the worker thread
    // keeps them blocked so that they all come to this one.
    const sigset_t old_mask = sluice_tools::hold_shutdown_signals();
    term_ = sluice::on_signal(loop, SIGTERM, [this] { stop(); });
    int_ = sluice::on_signal(loop, SIGINT, [this] { stop(); });
    hup_ = sluice::on_signal(loop, SIGHUP, [this] { worker_->request_reopen(); });

    std::error_code ec;
    worker_ = sluice::file_worker::open_log(o_.file, o_.log, ec);
    ::pthread_sigmask(SIG_SETMASK, &old_mask, nullptr);
    if (!worker_) {
      std::fprintf(stderr, "sluice-logd: %s: %s\n", o_.file.c_str(), sluice_tools::file_error(ec).c_str());
      return 1;
    }
    out_ = sluice::make_worker_writable(*worker_, {.high_water_mark = 256 * 1024});
    out_->on(sluice::event::error, [this](std::error_code e) { output_failed(e); });
    out_->on(sluice::event::drain, [this] { set_paused(false); });

    for (const std::string& addr : o_.listen) listen(addr);
    loop.run();
    if (const std::error_code closed = worker_->close(); closed && !failed_) output_failed(closed);
    if (o_.stats) print_totals();
    return status_;
  }

 private:
  void listen(const std::string& addr) {
    auto srv = std::make_unique<sluice::net::server>();
    sluice::net::server* s = srv.get();
    s->on(sluice::event::listening, [this, s, addr] {
      const auto a = s->address();
      if (addr.rfind("unix:", 0) == 0)
        std::fprintf(stderr, "sluice-logd: listening on %s\n", addr.c_str());
      else if (a->family == "IPv6")
        std::fprintf(stderr, "sluice-logd: listening on [%s]:%u\n", a->address.c_str(), a->port);
      else
        std::fprintf(stderr, "sluice-logd: listening on %s:%u\n", a->address.c_str(), a->port);
    });
    s->on(sluice::event::error, [this, addr](std::error_code e) {
      if (stopping_) return;
      std::fprintf(stderr, "sluice-logd: %s: %s\n", addr.c_str(), e.message().c_str());
      status_ = 1;
      stop();
    });
    s->on_connection([this](sluice::net::socket& sock) { accept(sock); });
    if (addr.rfind("unix:", 0) == 0) {
      s->listen(std::string_view(addr).substr(5));
    } else {
      const std::size_t colon = addr.rfind(':');
      std::string host = addr.substr(0, colon);
      if (host.size() >= 2 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
      std::uint64_t port = 0;
      if (!sluice_tools::parse_size(addr.c_str() + colon + 1, false, 65535, port))
        usage_error("--listen wants a port from 0 to 65535, got '" + addr + "'");
      s->listen(static_cast<std::uint16_t>(port), host);
    }
    servers_.push_back(std::move(srv));
  }

  void accept(sluice::net::socket& sock) {
    if (stopping_) {
      sock.destroy();
      return;
    }
    ++connections_;
    auto c = std::make_unique<connection>(connection{&sock, {o_.framing, o_.max_message}, peer_of(sock)});
    connection* conn = c.get();
    conns_.emplace(&sock, std::move(c));
    sock.on(sluice::event::data, [this, conn](std::string_view chunk) { on_data(*conn, chunk); });
    sock.on(sluice::event::end, [this, conn] {
      if (conn->frames.mid_frame())
        std::fprintf(stderr, "sluice-logd: %s: disconnected mid-frame; that frame is lost\n", conn->peer.c_str());
    });
    sock.on(sluice::event::error, [conn](std::error_code e) {
      std::fprintf(stderr, "sluice-logd: %s: %s\n", conn->peer.c_str(), e.message().c_str());
    });
    sock.on(sluice::event::close, [this, conn] { closed(*conn); });
    if (paused_) sock.pause();
  }

  static std::string peer_of(const sluice::net::socket& s) {
    const auto& r = s.remote();
    if (r.family == "unix") return "unix:" + s.local().address;
    return r.address + ":" + std::to_string(r.port);
  }

  void on_data(connection& c, std::string_view chunk) {
    const bool ok = c.frames.feed(chunk, [this, &c](std::string_view msg) { write(c, msg); });
    if (!ok) {
      ++malformed_;
      std::fprintf(stderr, "sluice-logd: %s: malformed frame: %s; closing the connection\n", c.peer.c_str(),
                   c.frames.error().c_str());
      c.sock->destroy();
    }
  }

  // One message, one line: LF and backslash escaped.
  void write(connection& c, std::string_view msg) {
    ++c.messages;
    c.bytes += msg.size();
    ++messages_;
    bytes_ += msg.size();
    bool more;
    // Two memchr() passes, not find_first_of("\n\\"), which calls memchr()
    // once a byte: that check was most of sluice-logd's CPU per message.
    const bool plain = msg.empty() || (std::memchr(msg.data(), '\n', msg.size()) == nullptr &&
                                       std::memchr(msg.data(), '\\', msg.size()) == nullptr);
    if (plain) {
      more = out_->vprint("{}\n", fmt::make_format_args(msg));
    } else {
      std::string line;
      line.reserve(msg.size() + 16);
      for (char ch : msg) {
        if (ch == '\n') line += "\\n";
        else if (ch == '\\') line += "\\\\";
        else line += ch;
      }
      line += '\n';
      more = out_->write(std::move(line));
    }
    if (!more && !out_->errored()) set_paused(true);
  }

  // Backpressure: every connection stops reading until 'drain'.
  void set_paused(bool p) {
    if (paused_ == p || stopping_) return;
    paused_ = p;
    for (auto& [sock, c] : conns_) p ? sock->pause() : sock->resume();
  }

  void closed(connection& c) {
    if (o_.stats) {
      if (o_.json)
        std::fprintf(stderr, "{\"peer\":\"%s\",\"messages\":%zu,\"bytes\":%zu}\n", c.peer.c_str(), c.messages, c.bytes);
      else
        std::fprintf(stderr, "sluice-logd: %s: %zu messages, %zu bytes\n", c.peer.c_str(), c.messages, c.bytes);
    }
    conns_.erase(c.sock);  // the server deletes the socket itself
  }

  // SIGTERM, SIGINT: no new connection, no more reading; what was read (and
  // is buffered in a paused connection) is written, then the file ends.
  void stop() {
    if (stopping_) return;
    for (auto& [sock, c] : conns_) {
      while (auto chunk = sock->read())
        if (!c->frames.feed(*chunk, [this, conn = c.get()](std::string_view msg) { write(*conn, msg); })) break;
    }
    stopping_ = true;
    for (auto& s : servers_) s->close();
    std::vector<sluice::net::socket*> socks;
    for (auto& [sock, c] : conns_) socks.push_back(sock);
    for (auto* s : socks) s->destroy();
    out_->end([this](std::error_code ec) {
      if (ec) output_failed(ec);
      quit();
    });
  }

  void output_failed(std::error_code ec) {
    if (failed_) return;
    failed_ = true;
    status_ = 1;
    std::fprintf(stderr, "sluice-logd: %s: %s\n", o_.file.c_str(), sluice_tools::file_error(ec).c_str());
    if (!stopping_) {
      stopping_ = true;
      for (auto& s : servers_) s->close();
      std::vector<sluice::net::socket*> socks;
      for (auto& [sock, c] : conns_) socks.push_back(sock);
      for (auto* s : socks) s->destroy();
    }
    quit();
  }

  void quit() {
    term_.reset();
    int_.reset();
    hup_.reset();
  }

  void print_totals() const {
    const auto b = static_cast<unsigned long long>(bytes_);
    if (o_.json)
      std::fprintf(stderr,
                   "{\"messages\":%zu,\"bytes\":%llu,\"connections\":%zu,\"malformed\":%zu,\"rotations\":%zu,"
                   "\"reopens\":%zu}\n",
                   messages_, b, connections_, malformed_, worker_->rotations(), worker_->reopens());
    else
      std::fprintf(stderr, "sluice-logd: %zu messages, %llu bytes, %zu connections, %zu malformed, %zu rotations, %zu reopens\n",
                   messages_, b, connections_, malformed_, worker_->rotations(), worker_->reopens());
  }

  const options& o_;
  std::unique_ptr<sluice::file_worker> worker_;
  std::unique_ptr<sluice::writable> out_;
  std::vector<std::unique_ptr<sluice::net::server>> servers_;
  std::unordered_map<sluice::net::socket*, std::unique_ptr<connection>> conns_;
  sluice::signal_watch term_, int_, hup_;
  std::size_t messages_ = 0, bytes_ = 0, connections_ = 0, malformed_ = 0;
  int status_ = 0;
  bool paused_ = false;
  bool stopping_ = false;
  bool failed_ = false;
};

}  // namespace

int main(int argc, char** argv) {
  sluice_tools::reserve_std_fds();
  sluice_tools::close_stdout_at_exit("sluice-logd");
  const options o = parse_args(argc, argv);
  ::signal(SIGPIPE, SIG_IGN);
  ::signal(SIGXFSZ, SIG_IGN);
  return logd(o).run();
}
