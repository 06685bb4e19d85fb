// server: Node v20's net.Server (lib/net.js): listens on TCP or a Unix path
// and hands each connection over as a net::socket.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>
#include <type_traits>
#include <unordered_map>
#include <utility>

#include "sluice/loop/emitter.h"
#include "sluice/base/errors.h"
#include "sluice/loop/loop.h"
#include "sluice/net/address.h"
#include "sluice/net/socket.h"

namespace sluice::net {

struct server_options {
  /// The options of every accepted socket (allow_half_open, the writable's
  /// options, the write deadline). Its event_loop is ignored: the server's
  /// own is used.
  socket_options connection{};
  /// listen(2)'s backlog (Node's default: 511).
  int backlog = 511;
  /// SO_REUSEPORT on a TCP listener (Node's `reusePort`, v22): several
  /// servers, one per thread, listen on one port and the kernel spreads the
  /// connections over them (see tests/examples/thread_per_core.cc).
  bool reuse_port = false;
  /// Node: server.maxConnections. A connection past it is closed at once.
  std::optional<std::size_t> max_connections{};
  /// After an accept error that is not one connection's (EMFILE, ENFILE,
  /// ENOBUFS, ENOMEM: the process or system is out of something; EINVAL: the
  /// listener was shut down), accepting pauses this long: such an error
  /// would come again at once.
  std::chrono::milliseconds accept_retry{100};
  /// A Unix listener's permissions and group (chmod and chown of its path),
  /// set before it accepts, so it is never reachable with other ones;
  /// unset: as the umask makes them, and the process's group. A failure
  /// (EPERM for a group the process may not give) is 'error' from listen().
  std::optional<mode_t> unix_mode{};
  std::optional<gid_t> unix_group{};
  /// sluice's own, after the round-robin primary of Node's cluster module
  /// (it accepts, and a worker's server serves each connection it is
  /// handed): when set, each connection accepted is given to it as its fd
  /// (non-blocking, close-on-exec) instead of being served here. It owns the
  /// fd: it hands it to adopt() of a server on another loop (through that
  /// loop's post()), or closes it. max_connections is left to the server
  /// that adopts it. Called on this server's loop.
  std::function<void(int fd)> hand_off{};
  /// The loop; null means loop::current().
  loop* event_loop = nullptr;
};

/// Node's `{fd}` handle for server.listen(handle): a stream socket that
/// another process made and passed down (systemd's socket activation, an
/// inetd, a parent that bound a privileged port), TCP or Unix.
struct handle {
  int fd = -1;
};

/// Node's net.Server. Events: 'listening'; 'connection', whose
/// event_arg::source is the new net::socket* (on_connection() adds a
/// listener that takes a socket&); 'error' (a failed listen, or an accept
/// error: the server keeps listening); 'close', once close() was called and
/// the last connection has closed.
///
/// An 'error' with no 'error' listener ends the program, as Node's uncaught
/// throw does: "sluice: unhandled 'error' event on net::server: <message>"
/// on stderr, then exit status 1 (std::_Exit: nothing else runs). A server
/// that cannot listen must not look like one that is serving.
///
///     sluice::net::server srv;
///     srv.on_connection([](sluice::net::socket& s) {
///       s.pipe(s);  // echo: pipe() pauses the reading while the writing is behind
///     });
///     srv.listen(0, "127.0.0.1");  // port 0: any free port; see address()
///     sluice::loop::current().run();
///
/// The server owns the sockets it accepts: each is deleted in the turn after
/// its 'close', and any left are destroyed with the server. Keep no pointer
/// to a socket past its 'close'.
class server : public emitter {
 public:
  explicit server(const server_options& options = {});
  ~server();

  /// Node: server.listen(port, host). Port 0 picks a free port. Differs
  /// from Node: the socket is bound and listening when this returns
  /// (listening() and address() hold at once), where Node first looks the
  /// host up and binds a tick later; sluice looks no name up. The events
  /// keep Node's order: 'listening', or 'error' (EADDRINUSE, ...), comes
  /// after a tick queued right after listen(), as Node's do.
  server& listen(std::uint16_t port, std::string_view host = "0.0.0.0");
  /// Node: server.listen(path): a Unix stream socket, removed by close().
  /// 'listening' or 'error' on the next tick, as in Node.
  /// Differs from Node: a socket file left at `path` by a listener that is
  /// gone (a connect() to it is refused) is removed and bound again; any
  /// other file there, or a live listener, is EADDRINUSE.
  server& listen(std::string_view path);
  /// Node: server.listen({fd}): serves a stream socket that is already
  /// open, TCP or Unix. The server owns `h.fd` from here (close() and the
  /// destructor close it), makes it non-blocking and close-on-exec, and
  /// calls listen(2) on it with options' backlog when it is not listening
  /// yet, as libuv's uv_listen() does for Node. A Unix socket's path is not
  /// the server's: close() leaves it, as whoever bound it owns it.
  /// 'listening' or 'error' on the next tick, as for a path: EBADF when
  /// `h.fd` is no open fd, ENOTSOCK when it is not a socket, EPROTOTYPE when
  /// it is not a stream socket (the fd is closed then too).
  server& listen(handle h);
  /// Serves `fd`, a connected stream socket accepted elsewhere (by another
  /// loop's server, see server_options::hand_off), as if this server had
  /// accepted it: past max_connections it is closed and counted in
  /// dropped(); else it is made a socket on this server's loop, and
  /// 'connection' is emitted before this returns. The server need not
  /// listen. Call on this server's loop; the server owns `fd` from here.
  server& adopt(int fd);
  /// Node: server.close(): stops accepting now; 'close' follows once every
  /// connection has closed. Open connections are not touched. As in Node,
  /// every call made once the server is drained emits 'close' again.
  server& close();
  /// Node: server.close(callback): also adds `done` as a once-listener of
  /// 'close', given nothing, or ERR_SERVER_NOT_RUNNING when the server was
  /// not listening (it is still called, after 'close').
  template <class F>
  server& close(F&& done) {
    static_assert(std::is_invocable_v<std::decay_t<F>&, std::error_code>, "close() takes a callback(std::error_code)");
    const std::error_code ec = listening() ? std::error_code{} : make_error_code(errc::server_not_running);
    once(event::close, [g = std::decay_t<F>(std::forward<F>(done)), ec]() mutable { g(ec); });
    return close();
  }

  /// Node: server.unref(): a listening server (and its accept retry) no
  /// longer keeps loop::run() going; ref() undoes it. Its connections are
  /// sockets of their own (socket::unref()).
  server& unref();
  server& ref();

  /// Adds a 'connection' listener that takes the socket.
  template <class F>
  listener_id on_connection(F&& f) {
    static_assert(std::is_invocable_v<std::decay_t<F>&, socket&>, "on_connection takes a socket&");
    return on(event::connection, [g = std::decay_t<F>(std::forward<F>(f))](const event_arg& a) mutable {
      g(*static_cast<socket*>(a.source));
    });
  }

  /// Node: server.address(): the bound address (the real port after
  /// listen(0)), or nothing while not listening.
  std::optional<address_info> address() const;
  /// Node: server.listening.
  bool listening() const noexcept { return fd_ >= 0; }
  /// Node: server.getConnections(): the connections not yet destroyed.
  std::size_t connections() const noexcept { return connections_; }
  /// Node: server.maxConnections, settable at any time.
  void set_max_connections(std::optional<std::size_t> max) noexcept { options_.max_connections = max; }

  /// sluice's own counters: connections served ('connection' emitted),
  /// accepted here or adopted (none given to hand_off); closed at once
  /// because of max_connections; accept errors met.
  std::size_t accepted() const noexcept { return accepted_; }
  std::size_t dropped() const noexcept { return dropped_; }
  std::size_t accept_errors() const noexcept { return accept_errors_; }

  loop& event_loop() const noexcept { return *loop_; }

 private:
  friend class socket;

  server& listen_at(std::error_code bad_address, const detail::sockaddr_any& at);
  void start_listening(int fd);
  void bind_and_listen(const detail::sockaddr_any& at);
  void fail_soon(std::error_code ec, int ticks);
  void emit_error(std::error_code ec) noexcept;
  void wait_for_connection();
  void on_connection_ready() noexcept;
  void serve(int fd);
  // A socket's fd has closed (its _destroy): Node's _connections-- and
  // _emitCloseIfDrained().
  void connection_gone() noexcept;
  // Its 'close' has been emitted: the socket can go.
  void forget(socket& s) noexcept;
  void emit_close_if_drained() noexcept;
  const void* tag() const noexcept { return &tag_; }

  server_options options_;
  loop* loop_;
  int fd_ = -1;
  char tag_ = 0;  // the owner of the server's loop tasks
  bool closing_ = false;
  int event_ticks_ = 1;  // the ticks before 'listening' or 'error' (2 for a host)
  std::string unix_path_;  // removed by close()
  std::unordered_map<socket*, std::unique_ptr<socket>> sockets_;
  std::size_t connections_ = 0;
  std::size_t accepted_ = 0;
  std::size_t dropped_ = 0;
  std::size_t accept_errors_ = 0;
};

}  // namespace sluice::net

namespace sluice::detail {
/// What a server does with an 'error' nobody listens to (net::server's,
/// tls::server's): "sluice: unhandled 'error' event on <server>: <message>"
/// on stderr, then std::_Exit(1).
[[noreturn]] void unhandled_server_error(const char* server, std::error_code ec) noexcept;
}  // namespace sluice::detail
