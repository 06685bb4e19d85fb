// sluice-logd's loops (logd.h). Each loop's logd accepts its senders
// (net::server, tls::server), frames their bytes (syslog_frame_reader,
// relp_session) and writes each message to its output; the main loop's
// also owns FILE's worker, the signals, --metrics and the other loops.
#include <fcntl.h>
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

#include "args.h"
#include "compress_problems.h"
#include "logd_stats.h"
#include "metrics_server.h"
#include "logd/line_escape.h"
#include "logd/loop_counts.h"
#include "logd/other_loop.h"
#include "logd/logd.h"
#include "logd/relay_output.h"
#include "logd/sync_acks.h"
#include "rate_limited_note.h"
#include "shutdown_signals.h"
#include "socket_perms.h"
#include "systemd.h"
#include "tls_server_args.h"
#include "sluice/sluice.h"
#include "sluice/syslog/relp_session.h"

namespace {

using options = sluice_tools::logd_options;
using sluice_tools::host_port;
using sluice_tools::logd_tool;

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
  sluice_tools::sync_acks unsynced{};  // RELP, --fsync ack: written, answered once synced
  bool sync_listed = false;            // in logd::unsynced_
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
    metrics_ = sluice_tools::start_metrics(logd_tool, o_.metrics, "sluice_logd", [this] { return stats(); });
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
    // --fsync ack: the writes complete once written, syncs follow them on
    // threads of their own, and a RELP message is answered once a sync
    // that began after its write has returned (answer_synced()).
    log.sync_behind = true;
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
    // --fsync ack: 8 MiB. When each batch was synced before its callbacks,
    // the mark counted the batch being synced too, and 1 MiB stopped the
    // reads for whole fsyncs (docs/benchmarks.md, "RELP with --fsync ack,
    // round 4"). Now that the syncs follow the writes (sync_behind), a
    // batch is done once written and the mark rarely matters; it stays as
    // the bound it was.
    const bool ack = o_.log.fsync == sluice::log_options::fsync_policy::every_bytes && o_.log.fsync_bytes == 0;
    auto out = sluice::make_worker_writable(*worker_, {.high_water_mark = ack ? 8 * 1024 * 1024 : 256 * 1024});
    sink_ = &out->get_sink();
    out_ = std::move(out);
    sync_watch_ = worker_->watch_syncs(sluice::loop::current(),
                                       [this](std::uint64_t synced, std::error_code ec) { on_synced(synced, ec); });
  }

  // --forward: the RELP writable to the next hop is the output; its write
  // callbacks come with the next hop's answers (relay_output.h).
  bool open_relay() {
    relay_ = std::make_unique<sluice_tools::relay_output>(o_.relay);
    std::string why;
    out_ = relay_->open(o_.max_message, why);
    // A setting librdkafka refuses (-X) is the command line's fault, as in
    // sluice-log.
    if (!out_ && o_.relay.kafka()) logd_tool.usage_error("--forward " + o_.relay.forward.front() + ": " + why);
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
    if (paused_ || stopping_ || c.in_file > 0 || !c.unsynced.empty()) {
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
    after_writes();
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
    if (c.relp && sync_watch_) {
      ++c.in_file;
      more = put(c, msg, [this, conn = &c](std::error_code ec) {
        if (!ec) ++n_.written;
        written_unsynced(*conn, ec);
      });
    } else if (c.relp) {
      ++c.in_file;
      more = put(c, msg, [this, conn = &c](std::error_code ec) {
        if (!ec) ++n_.written;
        stored(*conn, ec);
      });
    } else if (relay_) {
      more = put(c, msg, counted_.copy());
    } else {
      more = out_->write(line(msg), counted_);
    }
    if (!more && !out_->errored()) set_paused(true);
    if (c.relp) after_writes();  // on --listen, once a read (on_data())
  }

  // After a message, or on --listen a read's messages: what the loops and
  // the disk's watch are told.
  void after_writes() {
    if (main_) n_.waiting = out_->writable_length();
    // The main loop says when the disk is full, for all.
    else if (space_timer_ == 0 && !quitting_ && worker_) watch_space();
  }

  bool put(const connection& c, std::string_view msg, sluice::write_cb landed) {
    if (relay_) return relay_->write(*out_, msg, c.peer, std::move(landed));  // on as it came, not as a line
    return out_->write(line(msg), std::move(landed));
  }

  // `msg` as its line: copied with its LF into plain_ when nothing in it is
  // escaped, else escaped into line_. (A copy and a write() cost a third of
  // print()'s formatting.)
  std::string_view line(std::string_view msg) {
    if (plain_.size() <= msg.size()) plain_.resize(msg.size() + 1);
    if (!needs_escape(msg)) {
      std::memcpy(plain_.data(), msg.data(), msg.size());
      plain_[msg.size()] = '\n';
      return {plain_.data(), msg.size() + 1};
    }
    escape_into(msg, line_);
    return line_;
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

  // --fsync ack: a RELP message's write is done, its sync is not (yet): it
  // waits, in order, for synced() to reach its round's position. A write
  // that failed is handled as in stored().
  void written_unsynced(connection& c, std::error_code ec) {
    --c.in_file;
    if (c.gone) {
      if (c.in_file == 0) delete &c;
      return;
    }
    if (c.answers_closed) return;
    if (ec) {
      c.answers_closed = true;
      c.sock->destroy();
      return;
    }
    c.unsynced.add(sink_->position());
    // The sync that covers it may have returned, and been told, before
    // this callback came: then no other would tell it.
    answer_synced(c, worker_->synced());
    if (c.unsynced.empty()) {
      if (c.sync_listed) unlist(c);
    } else if (!c.sync_listed) {
      c.sync_listed = true;
      if (unsynced_.empty()) sluice::loop::current().hold();  // run() waits for the syncs
      unsynced_.push_back(&c);
    }
  }

  void unlist(connection& c) {
    c.sync_listed = false;
    std::erase(unsynced_, &c);
    if (unsynced_.empty()) syncs_done();
  }

  // A sync has returned (on this loop, from the worker's sync threads):
  // the messages it covers are answered; a sync that failed fails FILE.
  void on_synced(std::uint64_t synced, std::error_code ec) {
    if (ec) return output_failed(ec);
    if (unsynced_.empty()) return;  // answered as they were written
    std::size_t kept = 0;
    for (connection* c : unsynced_) {
      answer_synced(*c, synced);
      if (c->unsynced.empty())
        c->sync_listed = false;
      else
        unsynced_[kept++] = c;
    }
    unsynced_.resize(kept);
    if (unsynced_.empty()) syncs_done();
  }

  void answer_synced(connection& c, std::uint64_t synced) {
    std::size_t n = c.unsynced.take(synced);
    if (n == 0 || c.answers_closed) return;
    n_.answered += n;
    for (; n > 0; --n) c.relp->ack_next(c.answers);
    if (c.relp->close_due()) c.relp->answer_close(c.answers);
    queue_answers(c);
  }

  // No answer waits for a sync: run() may end, and after stop() the
  // senders hear serverclose.
  void syncs_done() {
    sluice::loop::current().release();
    if (ended_ && !failed_) say_serverclose();
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
    if (c.sync_listed) unlist(c);  // unanswered: its sender sends them again
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
      // With answers still waiting for their sync, serverclose follows
      // them (syncs_done()).
      ended_ = true;
      if (!failed_ && unsynced_.empty()) say_serverclose();
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
  // --fsync ack, on FILE: out_'s sink (a message's position), the watch on
  // the worker's syncs, and the RELP connections whose answers wait for one.
  sluice::worker_sink* sink_ = nullptr;
  std::unique_ptr<sluice::log_worker::sync_watch> sync_watch_;
  std::vector<connection*> unsynced_;
  bool ended_ = false;  // stop(): out_ has ended
  std::vector<std::unique_ptr<sluice::net::server>> servers_;
#if SLUICE_TOOL_TLS
  std::vector<std::unique_ptr<sluice::tls::server>> tls_servers_;
  std::unordered_set<sluice::net::socket*> handshaking_;  // --listen-tls connections not yet secure
#endif
  std::unordered_map<sluice::duplex*, std::unique_ptr<connection>> conns_;
  sluice::signal_watch term_, int_, hup_;
  sluice::timer_id grace_timer_ = 0, space_timer_ = 0;
  std::string line_;   // an escaped line, reused
  std::string plain_;  // a line with nothing escaped: its bytes and LF (only grows)
  // --listen's one write callback, passed by reference: a write makes no
  // callback of its own, and a run of lines of one size is called back in
  // one call.
  const sluice::write_cb counted_ = [this](std::error_code ec) {
    if (!ec) ++n_.written;
  };
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

namespace sluice_tools {

int run_logd(const logd_options& o) { return logd(o).run(); }

}  // namespace sluice_tools
