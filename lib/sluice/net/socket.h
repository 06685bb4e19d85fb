// socket: Node v20's net.Socket (lib/net.js): a duplex over a TCP or Unix
// stream socket, on the loop's public API only (watch, timers, ticks).
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <system_error>
#include <utility>
#include <vector>

#include "sluice/loop/loop.h"
#include "sluice/net/address.h"
#include "sluice/net/lookup.h"
#include "sluice/stream/duplex.h"
#include "sluice/stream/readable.h"
#include "sluice/stream/writable.h"

namespace sluice::net {

class server;
namespace detail {
class socket_sink;
class socket_source;
}  // namespace detail

struct socket_options {
  /// Node's allowHalfOpen, false by default as in net.Socket: when the peer
  /// ends its side (FIN), the socket ends its own once its writes are out.
  bool allow_half_open = false;
  /// The writable side's options: the high-water mark and every other option
  /// a writable takes (a hard cap on what it buffers, where there is one).
  /// Its `event_loop` is ignored: the socket's own is used.
  writable_options writable{};
  /// The readable side's high-water mark (Node's readableHighWaterMark).
  std::optional<std::size_t> readable_high_water_mark{};
  /// sluice's own: a socket that holds written data which has not all
  /// reached the kernel for this long is destroyed with
  /// errc::write_timeout (ERR_SLUICE_WRITE_TIMEOUT). Zero: no deadline.
  std::chrono::milliseconds write_deadline{0};
  /// The most bytes one read(2) takes.
  std::size_t read_chunk_size = 64 * 1024;
  /// sluice's own: the writes of a turn wait for its end and leave in one
  /// sendmsg() (see below). False: each write goes to the kernel at once
  /// (while none is in flight), as in Node, for a layer above that gathers
  /// its turn's writes itself (tls::socket's records), to which the wait
  /// adds a tick a write and nothing more.
  bool coalesce = true;
  /// The loop; null means loop::current().
  loop* event_loop = nullptr;
};

/// Node's net.Socket. Connect one with net::connect(), or get one from a
/// server's 'connection'. Events: 'connect' and 'ready' (once connected),
/// 'data', 'end' (the peer's FIN), 'drain', 'finish' (our FIN is sent:
/// end() shuts down the writing side once the writes are out), 'timeout'
/// (idle for set_timeout()'s time; nothing is destroyed), 'error', then
/// 'close', whose event_arg::error is the error when the socket closed
/// because of one (Node's hadError). Syscall errors keep their errno:
/// code_name() gives ECONNREFUSED, ECONNRESET, EPIPE, ETIMEDOUT. A host
/// given by name is looked up first (net::lookup(), off the loop), with a
/// 'lookup' for each address found, or one with the error before 'error'
/// (ENOTFOUND: "getaddrinfo ENOTFOUND <host>").
///
///     auto s = sluice::net::connect(8080, "127.0.0.1");
///     s->on(sluice::event::connect, [&] { s->end("GET / HTTP/1.0\r\n\r\n"); });
///     s->on(sluice::event::data, [](std::string_view c) { fwrite(c.data(), 1, c.size(), stdout); });
///     s->on(sluice::event::close, [](const sluice::event_arg& a) { had_error = bool(a.error); });
///     sluice::loop::current().run();
///
/// What write() is given in one turn of the loop goes out in as few
/// sendmsg() calls as the kernel allows (up to IOV_MAX buffers each, never a
/// SIGPIPE). Writes made before the connection is up wait for it.
class socket : public duplex {
 public:
  /// A socket that is not connected yet: call connect().
  explicit socket(const socket_options& options = {});
  /// Adopts `fd`, a connected stream socket (made non-blocking here); the
  /// socket closes it. Node: new net.Socket({ fd }).
  socket(int fd, const socket_options& options);
  ~socket();

  /// Node: socket.connect(port, host). `host` is an IP address or a name
  /// (empty means "localhost"). A name is looked up on a resolver thread
  /// (net::lookup(), getaddrinfo() with AI_ADDRCONFIG, as Node's net does)
  /// and 'lookup' (err, address, family, host) is emitted for each address
  /// found; an IP literal is not looked up and has no 'lookup', as in Node.
  /// The addresses are tried in turn, one at a time, in Node's order
  /// (each once, the two families alternating, the first one's family
  /// first) until one connects; if none does, the socket's error is the
  /// first one's (Node's AggregateError has the first one's code). Differs
  /// from Node: no attempt is abandoned early (Node v20's autoSelectFamily
  /// moves on after 250 ms), and there is no 'connectionAttempt' event.
  /// Returns at once; 'connect' (or 'error') follows.
  socket& connect(std::uint16_t port, std::string_view host = "localhost");
  /// Node: socket.connect(path), to a Unix stream socket.
  socket& connect(std::string_view path);

  /// Node: resetAndDestroy(): closes with a TCP RST (SO_LINGER 0), so the
  /// peer sees ECONNRESET. While connecting it waits for 'connect' (which is
  /// emitted, and 'ready') and resets then; a socket that never connected is
  /// destroyed with ERR_SOCKET_CLOSED.
  socket& reset_and_destroy();

  /// Node: setTimeout(ms): emits 'timeout' once the socket has been idle
  /// (nothing read or written) for `ms`; zero turns it off. The socket stays
  /// open: end or destroy it in the listener.
  socket& set_timeout(std::chrono::milliseconds ms);
  /// Node: setTimeout(ms, callback): the same, and `on_timeout` (any
  /// listener shape) is added as a once-listener of 'timeout'. Differs from
  /// Node: with zero, nothing is added, and a callback added before stays
  /// (Node removes the one given; C++ callables cannot be compared: use
  /// once()'s id and off()).
  template <class F>
  socket& set_timeout(std::chrono::milliseconds ms, F&& on_timeout) {
    set_timeout(ms);
    if (ms.count() > 0) once(event::timeout, std::forward<F>(on_timeout));
    return *this;
  }

  /// Node: unref(): this socket (its connection, reads, writes and timers)
  /// no longer keeps loop::run() going; ref() undoes it. Its events still
  /// come while something else keeps the loop running.
  socket& unref();
  socket& ref();
  /// Node: setNoDelay(): TCP_NODELAY (no-op on a Unix socket).
  socket& set_no_delay(bool no_delay = true);
  /// Node: setKeepAlive(enable, initialDelay).
  socket& set_keep_alive(bool enable = false, std::chrono::milliseconds initial_delay = {});

  /// Node: connecting, pending, readyState's "opening".
  bool connecting() const noexcept { return connecting_; }
  /// Node: bytesRead.
  std::size_t bytes_read() const noexcept;
  /// Node: bytesWritten. Differs from Node: the bytes the kernel has taken,
  /// not counting those still buffered.
  std::size_t bytes_written() const noexcept;
  /// Node: localAddress/localPort/localFamily and remoteAddress/remotePort/
  /// remoteFamily, as of the connection. As in Node, the local address is
  /// forgotten (empty, port 0) once the socket is destroyed; the remote one
  /// stays. Made when asked, as Node's getters are: the local one from the
  /// fd (getsockname()), the remote one from the peer's sockaddr kept at
  /// the connection, so that an idle socket holds no strings.
  address_info local() const;
  address_info remote() const;
  std::string local_address() const { return local().address; }
  std::uint16_t local_port() const { return local().port; }
  std::string remote_address() const { return remote().address; }
  std::uint16_t remote_port() const noexcept;

  /// sluice's own counters. write_syscalls(): sendmsg() calls made;
  /// chunks_written(): the chunks they were given (chunks_written() /
  /// write_syscalls() is the batching achieved). bytes_cut_off(): bytes
  /// still buffered when the write deadline destroyed the socket.
  std::size_t write_syscalls() const noexcept;
  std::size_t chunks_written() const noexcept;
  std::size_t bytes_cut_off() const noexcept { return more_ ? more_->bytes_cut_off : 0; }

  int fd() const noexcept { return fd_; }

  /// sluice's own, for the layer above (tls::socket): `f` is called with the
  /// fd just before it is closed by a destroy with an error (a reset, a
  /// broken pipe), so that what the peer sent before can still be read from
  /// the kernel's buffer (a TLS alert that says why). Called at most once; it
  /// must not destroy or close anything.
  void before_error_close(std::function<void(int fd, std::error_code err)> f);

 private:
  friend class detail::socket_sink;
  friend class detail::socket_source;
  friend class server;

  void init(const socket_options& options);
  void after_lookup(std::error_code ec, std::span<const lookup_address> found) noexcept;
  void emit_lookup(std::error_code ec, std::string_view address, int family) noexcept;
  socket& connect_to(std::error_code bad_address, const detail::sockaddr_any& to);
  void start_connect(const detail::sockaddr_any& to);
  void after_connect(std::error_code ec) noexcept;
  void reset_now() noexcept;
  void connected() noexcept;
  void apply_options() noexcept;
  // Called by the source's destroy, the last step of Node's _destroy():
  // closes the fd and emits 'close' from the loop.
  void close_handle(std::error_code err) noexcept;
  // Reading or writing: the idle timer starts again (Node: _unrefTimer()).
  void touch() noexcept;
  void arm_idle(std::chrono::milliseconds delay);
  void on_idle() noexcept;
  // The write deadline: armed while written data waits for the kernel.
  void arm_deadline();
  void clear_deadline() noexcept;
  void on_deadline() noexcept;
  const void* tag() const noexcept { return &tag_; }

  // What few sockets use (timers, options set before the connection, a Unix
  // peer's path, the TLS layer's hook), apart from the socket so that an
  // idle connection does without it: made on first use (see more()).
  struct extras {
    std::function<void(int, std::error_code)> before_error_close;
    std::optional<std::chrono::milliseconds> keep_alive;
    std::chrono::milliseconds idle_timeout{0};
    std::chrono::steady_clock::time_point last_active{};
    timer_id idle_timer = 0;
    std::chrono::milliseconds write_deadline{0};
    timer_id deadline_timer = 0;
    std::size_t bytes_cut_off = 0;
    std::string unix_peer;  // a Unix socket's peer path, when it has one
  };
  extras& more();
  void keep_remote(int fd);

  int fd_ = -1;
  char tag_ = 0;  // the owner of the socket's own loop tasks (see tag())
  bool connecting_ = false;
  bool no_delay_ = false;
  detail::peer_address remote_{};  // the peer, as of the connection
  detail::socket_sink* sink_ = nullptr;
  detail::socket_source* source_ = nullptr;
  server* server_ = nullptr;  // the server that accepted it, if any
  std::unique_ptr<extras> more_;
  // A connection to a name: its lookup and the addresses it gave (see
  // socket.cc). Made by connect(port, name) alone.
  struct by_name;
  std::unique_ptr<by_name> named_;
};

/// Node: net.connect(port, host) / net.createConnection().
std::unique_ptr<socket> connect(std::uint16_t port, std::string_view host = "localhost",
                                const socket_options& options = {});
/// Node: net.connect(path), to a Unix stream socket.
std::unique_ptr<socket> connect(std::string_view path, const socket_options& options = {});

}  // namespace sluice::net
