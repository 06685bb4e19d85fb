// Node's net.Server (lib/net.js): listen, onconnection, close and
// _emitCloseIfDrained, over the loop's public API.
#include "sluice/net/server.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>

#include "sluice/base/detail/syscalls.h"
#include "sluice/net/detail/unix_path.h"

namespace sluice::net {

using sluice::detail::last_error;

server::server(const server_options& options)
    : options_(options), loop_(options.event_loop ? options.event_loop : &loop::current()) {
  options_.connection.event_loop = loop_;
}

server::~server() {
  loop_->cancel(tag());
  loop_->ref(tag());  // the loop must not keep this address as unref'd
  if (fd_ >= 0) {
    loop_->forget_fd(fd_);
    ::close(fd_);
  }
  if (!unix_path_.empty()) ::unlink(unix_path_.c_str());
  // The sockets still held go with the server, without events; each must
  // not report back to it while it goes.
  for (auto& [raw, owned] : sockets_) raw->server_ = nullptr;
  sockets_.clear();
}

// Node looks the host up first (dns.lookup, a tick even for an IP literal)
// and binds in its callback, so 'listening' and 'error' come a tick later
// than for a path: event_ticks_ keeps that order.
server& server::listen(std::uint16_t port, std::string_view host) {
  detail::sockaddr_any at;
  event_ticks_ = 2;
  return listen_at(detail::tcp_address(host, port, at), at);
}

server& server::listen(std::string_view path) {
  detail::sockaddr_any at;
  event_ticks_ = 1;
  listen_at(detail::unix_address(path, at), at);
  if (fd_ >= 0) unix_path_ = path;
  return *this;
}

// Node: listenInCluster() with a handle: libuv's uv_tcp_open() or
// uv_pipe_open() on the fd, then uv_listen(), which calls listen(2) again.
// Differs from Node: on a socket that listens already that call would only
// set the backlog, so it is skipped, and a socket passed by systemd keeps
// its own Backlog= (docs/differences-from-node.md).
server& server::listen(handle h) {
  event_ticks_ = 1;
  closing_ = false;
  int type = 0;
  socklen_t len = sizeof type;
  if (::getsockopt(h.fd, SOL_SOCKET, SO_TYPE, &type, &len) != 0 || type != SOCK_STREAM) {
    const std::error_code ec = type != 0 && type != SOCK_STREAM ? std::error_code(EPROTOTYPE, std::system_category())
                                                                 : last_error();
    if (ec.value() != EBADF) ::close(h.fd);
    fail_soon(ec, event_ticks_);
    return *this;
  }
  int accepting = 0;
  len = sizeof accepting;
  const int flags = ::fcntl(h.fd, F_GETFL);
  if (::getsockopt(h.fd, SOL_SOCKET, SO_ACCEPTCONN, &accepting, &len) != 0 || flags < 0 ||
      ::fcntl(h.fd, F_SETFL, flags | O_NONBLOCK) != 0 || ::fcntl(h.fd, F_SETFD, FD_CLOEXEC) != 0 ||
      (!accepting && ::listen(h.fd, options_.backlog) != 0)) {
    const std::error_code ec = last_error();
    ::close(h.fd);
    fail_soon(ec, event_ticks_);
    return *this;
  }
  start_listening(h.fd);
  return *this;
}

server& server::listen_at(std::error_code bad_address, const detail::sockaddr_any& at) {
  if (bad_address)
    fail_soon(bad_address, event_ticks_);
  else
    bind_and_listen(at);
  return *this;
}

// Node: setupListenHandle(), then 'listening' on the next tick
// (emitListeningNT); a failure is 'error' on the next tick.
void server::bind_and_listen(const detail::sockaddr_any& at) {
  closing_ = false;
  const int fd = ::socket(at.family(), SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    fail_soon(last_error(), event_ticks_);
    return;
  }
  // As libuv does for TCP: a restarted server can bind its port again while
  // old connections linger in TIME_WAIT.
  if (at.family() != AF_UNIX) {
    const int on = 1;
    ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on, sizeof on);
    // A server per thread on one port: the kernel spreads the connections.
    if (options_.reuse_port && ::setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &on, sizeof on) != 0) {
      const std::error_code ec = last_error();
      ::close(fd);
      fail_soon(ec, event_ticks_);
      return;
    }
  }
  if (detail::bind_listener(fd, at, options_.unix_mode, options_.unix_group) != 0 || ::listen(fd, options_.backlog) != 0) {
    const std::error_code ec = last_error();
    ::close(fd);
    fail_soon(ec, event_ticks_);
    return;
  }
  start_listening(fd);
}

// The fd listens: accept on it, and say 'listening' after event_ticks_.
void server::start_listening(int fd) {
  fd_ = fd;
  wait_for_connection();
  const auto emit_listening = [this] {
    if (listening()) emit(event::listening);
  };
  if (event_ticks_ > 1)
    loop_->next_tick([this, emit_listening] { loop_->next_tick(emit_listening, tag()); }, tag());
  else
    loop_->next_tick(emit_listening, tag());
}

// Node: emitErrorNT, after `ticks` ticks (see listen()).
void server::fail_soon(std::error_code ec, int ticks) {
  if (ticks > 1) {
    loop_->next_tick([this, ec, ticks] { fail_soon(ec, ticks - 1); }, tag());
    return;
  }
  loop_->next_tick([this, ec] { emit_error(ec); }, tag());
}

// Node throws an 'error' nobody listens to, which ends the process (exit
// status 1). Differs from the streams (see emitter.h), which go on: a
// server that failed to listen, or cannot accept, serves nobody, and a
// program that goes on looks, to its supervisor, like one that serves.
void server::emit_error(std::error_code ec) noexcept {
  if (listener_count(event::error) == 0) sluice::detail::unhandled_server_error("net::server", ec);
  event_arg arg;
  arg.error = ec;
  emit(event::error, arg);
}

std::optional<address_info> server::address() const {
  if (fd_ < 0) return std::nullopt;
  address_info a = detail::local_address_of(fd_);
  if (!unix_path_.empty()) a = {unix_path_, "unix", 0};
  return a;
}

// accept(2)'s errors that belong to the connection being accepted, not to
// the listener: Linux passes a pending network error of the new socket on
// as accept()'s, and says to retry.
static bool one_connections_error(int e) {
  switch (e) {
    case EINTR: case ECONNABORTED: case EPROTO: case ENETDOWN: case ENETUNREACH:
    case EHOSTDOWN: case EHOSTUNREACH: case ENONET: case ENOPROTOOPT: case EOPNOTSUPP:
      return true;
    default:
      return false;
  }
}

void server::wait_for_connection() {
  loop_->watch(fd_, POLLIN, [this](short) { on_connection_ready(); }, tag());
}

// Node: onconnection(), for every connection waiting (libuv accepts until
// EAGAIN). Past max_connections a connection is closed at once. An error
// that is one connection's (aborted, or a network error Linux's accept()
// passes on from it) is skipped, as accept(2) advises. Any other is 'error'
// and accepting pauses for accept_retry: running out of fds or memory, or a
// listener that cannot accept any more (EINVAL once it was shut down), would
// fail again at once, and accepting in a loop would never give the event
// loop back. A connection waits in the backlog meanwhile.
void server::on_connection_ready() noexcept {
  for (;;) {
    if (fd_ < 0) return;  // closed by a listener
    const int fd = ::accept4(fd_, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) {
      const int e = errno;
      if (e == EAGAIN || e == EWOULDBLOCK) break;
      if (one_connections_error(e)) continue;
      ++accept_errors_;
      loop_->set_timeout(options_.accept_retry, [this] {
        if (listening()) on_connection_ready();
      }, tag());
      emit_error({e, std::system_category()});
      return;
    }
    if (options_.hand_off) options_.hand_off(fd);
    else serve(fd);
  }
  if (fd_ >= 0) wait_for_connection();
}

server& server::adopt(int fd) {
  serve(fd);
  return *this;
}

// One connection, accepted here or handed over: its socket, then
// 'connection'.
void server::serve(int fd) {
  if (options_.max_connections && connections_ >= *options_.max_connections) {
    ++dropped_;
    ::close(fd);
    return;
  }
  auto owned = std::make_unique<socket>(fd, options_.connection);
  socket* s = owned.get();
  s->server_ = this;
  sockets_.emplace(s, std::move(owned));
  ++connections_;
  ++accepted_;
  event_arg arg;
  arg.source = s;
  emit(event::connection, arg);
}

// Node: server.close(): the handle closes now; 'close' once drained.
server& server::close() {
  closing_ = true;
  if (fd_ >= 0) {
    loop_->cancel(tag());
    loop_->forget_fd(fd_);
    ::close(fd_);
    fd_ = -1;
    if (!unix_path_.empty()) {
      ::unlink(unix_path_.c_str());
      unix_path_.clear();
    }
  }
  emit_close_if_drained();
  return *this;
}

// Node: server.unref()/ref(), kept across listen() and close() as Node's
// kRefed is: the loop keeps the state by owner (tag()).
server& server::unref() {
  loop_->unref(tag());
  return *this;
}

server& server::ref() {
  loop_->ref(tag());
  return *this;
}

// Node's socket._destroy() counts the connection off after its own
// callback, which queued the socket's 'error': the server's 'close' comes
// after that 'error', so it waits a tick more here.
void server::connection_gone() noexcept {
  --connections_;
  if (closing_) loop_->next_tick([this] { emit_close_if_drained(); }, tag());
}

void server::forget(socket& s) noexcept {
  s.server_ = nullptr;
  sockets_.erase(&s);
}

// Node: _emitCloseIfDrained(): 'close' on the next tick once no handle and no
// connection is left.
void server::emit_close_if_drained() noexcept {
  if (fd_ >= 0 || connections_ > 0) return;
  loop_->next_tick([this] { emit(event::close); }, tag());
}

}  // namespace sluice::net

namespace sluice::detail {
void unhandled_server_error(const char* server, std::error_code ec) noexcept {
  std::fprintf(stderr, "sluice: unhandled 'error' event on %s: %s\n", server, ec.message().c_str());
  std::fflush(nullptr);
  std::_Exit(1);
}
}  // namespace sluice::detail
