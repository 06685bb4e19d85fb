// reconnecting_socket: a client connection that comes back. It connects at
// once and, after a failed connect or a lost connection, again after a
// capped exponential backoff, until stopped; and it bounds, when asked, how
// long something may wait for a connection. The syslog and RELP writables'
// transports sit on it, over TCP, a Unix socket, or a stream that wraps the
// TCP socket (TLS).
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>
#include <utility>
#include <vector>

#include "sluice/loop/loop.h"
#include "sluice/net/socket.h"

namespace sluice::detail {

struct reconnect_options {
  /// A TCP address (an IP literal or "localhost") and port, or, when
  /// `unix_path` is set, a Unix stream socket.
  std::string host = "127.0.0.1";
  std::uint16_t port = 0;
  std::string unix_path;
  /// Further TCP addresses (host, port), tried in turn after host:port:
  /// a connection that closes before it was established() moves the next
  /// attempt to the next address (after the last, the first again); one
  /// that was established and is lost is tried again first.
  std::vector<std::pair<std::string, std::uint16_t>> alternates;
  /// After a failed connect or a lost connection the next attempt waits
  /// reconnect_min, then twice as long each time, up to reconnect_max;
  /// established() resets it.
  std::chrono::milliseconds reconnect_min{100};
  std::chrono::milliseconds reconnect_max{5000};
  /// How long wait_for_connection() waits before on_give_up; unset: no bound.
  std::optional<std::chrono::milliseconds> give_up_after{};
};

/// One connection at a time, replaced when it closes. Its user says when a
/// connection counts as up (a TCP connect, a protocol's handshake) with
/// established(), and hears of the current connection only: events of one
/// already replaced are dropped, and a replaced one is deleted only once
/// its own event has returned. A connection is the socket itself, or, with
/// hooks::wrap, the stream that wraps it (a TLS client over it).
///
///     detail::reconnecting_socket rc(o, {.on_connect = [&](duplex& s) { rc.established(); s.write("hello\n"); },
///                                     .on_close = [&](std::error_code ec) { ... }});
///     rc.start(loop);
class reconnecting_socket {
 public:
  struct hooks {
    /// Set: each new socket, connecting, is handed over to it, and the
    /// stream it returns over that socket (a tls::socket) is the
    /// connection: what is written and read, its 'error' and 'close'. Its
    /// 'secureConnect' is then the connect (on_connect).
    std::function<std::unique_ptr<duplex>(std::unique_ptr<net::socket>)> wrap;
    /// The current connection connected (TCP's 'connect', or, with wrap,
    /// the wrapper's 'secureConnect').
    std::function<void(duplex&)> on_connect;
    /// Bytes from the current connection; unset: read and dropped (to see FIN).
    std::function<void(duplex&, std::string_view)> on_data;
    /// The peer's end on the current connection; unset: it is destroyed.
    std::function<void(duplex&)> on_end;
    /// The current socket closed, `ec` its error (or the last 'error' seen
    /// on it, or fail()'s reason; empty for a clean close). The next
    /// attempt is already scheduled unless stop() was called; the hook may
    /// stop() it, and may be the last thing to run on this object.
    std::function<void(std::error_code ec)> on_close;
    /// Something waited give_up_after for a connection (see
    /// wait_for_connection()), `ec` the last connection error or ETIMEDOUT.
    std::function<void(std::error_code ec)> on_give_up;
  };

  reconnecting_socket(const reconnect_options& options, hooks h);
  ~reconnecting_socket();
  reconnecting_socket(const reconnecting_socket&) = delete;
  reconnecting_socket& operator=(const reconnecting_socket&) = delete;

  /// Connects now, on `l`. Once: a second call does nothing.
  void start(loop& l);
  /// The connection in use (connecting, connected or closing): the socket,
  /// or its wrapper; null before start().
  duplex* current() noexcept { return conn_.get(); }
  /// The TCP or Unix socket under current() (itself without wrap): its fd,
  /// its counters; null before start().
  net::socket* tcp() noexcept { return tcp_; }
  /// The current connection counts as up: the backoff starts again from
  /// reconnect_min, a give-up wait ends, and every one after the first
  /// counts in reconnects().
  void established() noexcept;
  /// Something waits for a connection: unless one is established (or the
  /// wait is already on), on_give_up comes after give_up_after.
  void wait_for_connection();
  /// No more attempts and no give-up; the current socket stays as it is.
  void stop() noexcept;
  /// The current connection is bad: `why` becomes its error, and it is
  /// destroyed (its on_close follows, then the next attempt).
  void fail(std::error_code why) noexcept;
  /// Stops, and deletes the sockets now: for an owner's destructor, so that
  /// the sockets' last events (a write's callback) find the owner whole.
  /// Their hooks are not called.
  void release() noexcept;
  /// The last connection error seen on any socket, and on the current one.
  std::error_code last_error() const noexcept { return last_error_; }
  /// Says, in the user's words, why the last connection ended (from
  /// on_close: a protocol that knows better than ECONNRESET); a give-up then
  /// reports it.
  void set_last_error(std::error_code why) noexcept { last_error_ = why; }
  std::error_code connection_error() const noexcept { return conn_error_; }
  /// Connections established after the first.
  std::size_t reconnects() const noexcept { return reconnects_; }

 private:
  void connect_now();
  void on_close(duplex* s, std::error_code err);
  void cancel_timers() noexcept;

  reconnect_options o_;
  hooks h_;
  loop* loop_ = nullptr;
  std::unique_ptr<duplex> conn_;  // the socket, or its wrapper
  net::socket* tcp_ = nullptr;    // the socket under conn_
  std::unique_ptr<duplex> old_;   // never deleted inside its own event
  std::error_code last_error_;
  std::error_code conn_error_;
  std::chrono::milliseconds backoff_;
  timer_id retry_timer_ = 0;
  timer_id give_up_timer_ = 0;
  std::size_t reconnects_ = 0;
  bool established_ = false;
  std::size_t at_ = 0;  // the address in use: 0 is host:port, i is alternates[i - 1]
  bool ever_established_ = false;
  bool stopped_ = false;
  bool dying_ = false;
};

}  // namespace sluice::detail
