// Node's net.Socket (lib/net.js): connect, _destroy, the idle timeout and
// the write deadline, over the loop's public API. Its writable side
// (_writeGeneric, _final) is detail/socket_sink.cc, its readable side
// (onStreamRead) detail/socket_source.cc.
#include "sluice/net/socket.h"

#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <netdb.h>

#include <algorithm>
#include <cerrno>
#include <optional>

#include "sluice/base/errors.h"
#include "sluice/net/detail/socket_sink.h"
#include "sluice/net/detail/socket_source.h"
#include "sluice/net/server.h"
#include "sluice/base/detail/syscalls.h"

namespace sluice::net {

using sluice::detail::last_error;

// A connection to a name: its lookup, and the addresses it gave, tried in
// turn (`attempt` is the one being tried). Apart from the socket, so that an
// accepted socket, or one connected to an address, does without its ~100 B.
struct socket::by_name {
  std::string host;
  std::uint16_t port = 0;
  lookup_request lookup;
  std::vector<detail::sockaddr_any> attempts;
  std::size_t attempt = 0;
  std::error_code first_error;
};

namespace {
readable_options readable_side_options(const socket_options& o) {
  readable_options r;
  r.high_water_mark = o.readable_high_water_mark;
  r.event_loop = o.event_loop;
  r.emit_close = false;  // the socket emits 'close' itself, with hadError
  return r;
}
writable_options writable_side_options(const socket_options& o) {
  writable_options w = o.writable;
  w.event_loop = o.event_loop;
  w.emit_close = false;
  w.object_mode = false;
  return w;
}
}  // namespace

// Node: new net.Socket(options): allowHalfOpen false by default, emitClose
// false (the socket emits 'close' with hadError), autoDestroy true.
socket::socket(const socket_options& options)
    : duplex(std::make_unique<detail::socket_source>(*this, options.read_chunk_size),
             std::make_unique<detail::socket_sink>(*this, options.coalesce), readable_side_options(options),
             writable_side_options(options), options.allow_half_open) {
  init(options);
}

socket::socket(int fd, const socket_options& options) : socket(options) {
  fd_ = fd;
  const int flags = ::fcntl(fd, F_GETFL);
  if (flags >= 0 && !(flags & O_NONBLOCK)) ::fcntl(fd, F_SETFL, flags | O_NONBLOCK);
  keep_remote(fd);
  sink_->ready(fd);
  source_->ready(fd);
  // Node: "unlike Readable streams, this begins reading immediately", up to
  // the high-water mark, so that the peer's FIN or RST is seen unasked.
  read(0);
}

void socket::init(const socket_options& options) {
  sink_ = static_cast<detail::socket_sink*>(&get_sink());
  source_ = static_cast<detail::socket_source*>(&get_source());
  if (options.write_deadline.count() != 0) more().write_deadline = options.write_deadline;
}

socket::extras& socket::more() {
  if (!more_) more_ = std::make_unique<extras>();
  return *more_;
}

void socket::before_error_close(std::function<void(int fd, std::error_code err)> f) {
  if (f || more_) more().before_error_close = std::move(f);
}

// Node's remoteAddress is looked up when asked and kept (_getpeername());
// sluice keeps the peer's sockaddr from the connection on, so that it is
// there after the close too, whenever it is asked for.
void socket::keep_remote(int fd) {
  std::string path;
  remote_ = detail::peer_of(fd, path);
  if (!path.empty()) more().unix_peer = std::move(path);
}

// Node: _getsockname(), while the handle is open and connected; empty before
// and after, as Node's (its _sockname is dropped by _destroy()).
address_info socket::local() const {
  if (fd_ < 0 || connecting_) return {};
  return detail::local_address_of(fd_);
}

address_info socket::remote() const {
  return detail::describe(remote_, more_ ? std::string_view(more_->unix_peer) : std::string_view());
}

std::uint16_t socket::remote_port() const noexcept {
  switch (remote_.family) {
    case AF_INET:
      return ntohs(remote_.v4.sin_port);
    case AF_INET6:
      return ntohs(remote_.v6.sin6_port);
    default:
      return 0;
  }
}

socket::~socket() {
  if (named_) named_->lookup.cancel();
  event_loop().cancel(tag());
  ref();  // the loop must not keep this address as unref'd
  // The sides are destroyed after this body (by ~duplex): they must not
  // call back into a socket that is gone.
  sink_->detach();
  source_->detach();
  if (fd_ >= 0) {
    event_loop().forget_fd(fd_);
    ::close(fd_);
  }
}

std::size_t socket::bytes_read() const noexcept { return source_->bytes_read(); }
std::size_t socket::bytes_written() const noexcept { return sink_->bytes_written(); }
std::size_t socket::write_syscalls() const noexcept { return sink_->syscalls(); }
std::size_t socket::chunks_written() const noexcept { return sink_->chunks(); }

// Node: lookupAndConnect(): an IP literal is connected to on the next tick;
// a name ("localhost" too) is looked up first.
socket& socket::connect(std::uint16_t port, std::string_view host) {
  if (host.empty()) host = "localhost";
  if (is_ip(host) != 0) {
    detail::sockaddr_any to;
    return connect_to(detail::tcp_address(host, port, to), to);
  }
  if (destroyed() || fd_ >= 0 || connecting_) return *this;
  connecting_ = true;
  named_ = std::make_unique<by_name>();
  named_->host = std::string(host);
  named_->port = port;
  named_->lookup = net::lookup(host, {.family = 0, .hints = AI_ADDRCONFIG, .event_loop = &event_loop()},
                        [this](std::error_code ec, std::span<const lookup_address> found) { after_lookup(ec, found); });
  return *this;
}

// Node v20: lookupAndConnectMultiple()'s emitLookup (autoSelectFamily is on
// by default): nothing for a socket destroyed meanwhile (its lookup was
// cancelled); on an error, 'lookup' and then, on the next tick, the
// socket's destruction with it; else a 'lookup' per address, then the
// addresses in Node's order, each once, the families alternating.
void socket::after_lookup(std::error_code ec, std::span<const lookup_address> found) noexcept {
  if (destroyed() || !connecting_) return;
  if (ec) {
    emit_lookup(ec, {}, 0);
    event_loop().next_tick([this, ec] { after_connect(ec); }, tag());
    return;
  }
  std::vector<detail::sockaddr_any> by_family[2];
  int first_family = 0;
  for (const lookup_address& a : found) {
    emit_lookup({}, a.address, a.family);
    if (destroyed()) return;
    detail::sockaddr_any to;
    if (detail::tcp_address(a.address, named_->port, to)) continue;
    if (!first_family) first_family = a.family;
    by_family[a.family == first_family ? 0 : 1].push_back(to);
  }
  std::vector<detail::sockaddr_any>& attempts = named_->attempts;
  attempts.clear();
  for (std::size_t i = 0; i < std::max(by_family[0].size(), by_family[1].size()); ++i) {
    if (i < by_family[0].size()) attempts.push_back(by_family[0][i]);
    if (i < by_family[1].size()) attempts.push_back(by_family[1][i]);
  }
  if (attempts.empty()) {  // getaddrinfo() gave nothing usable
    event_loop().next_tick([this, ec = lookup_error(EAI_NONAME, named_->host)] { after_connect(ec); }, tag());
    return;
  }
  named_->attempt = 0;
  touch();  // Node: _unrefTimer()
  start_connect(attempts[0]);
}

void socket::emit_lookup(std::error_code ec, std::string_view address, int family) noexcept {
  const lookup_event e{ec, address, family, named_->host};
  event_arg arg;
  arg.error = ec;
  arg.chunk = address;
  arg.source = const_cast<lookup_event*>(&e);
  emit(event::lookup, arg);
}

socket& socket::connect(std::string_view path) {
  detail::sockaddr_any to;
  return connect_to(detail::unix_address(path, to), to);
}

socket& socket::connect_to(std::error_code bad_address, const detail::sockaddr_any& to) {
  if (destroyed() || fd_ >= 0 || connecting_) return *this;  // Differs from Node: no second connect() on one socket
  connecting_ = true;
  if (bad_address) {
    // Node: a failed lookup destroys the socket on a later tick.
    event_loop().next_tick([this, bad_address] { after_connect(bad_address); }, tag());
    return *this;
  }
  if (to.family() == AF_UNIX) {
    start_connect(to);  // Node: a path is connected at once
    return *this;
  }
  // Node looks a host up first (dns.lookup, even an IP literal) and connects
  // on a later tick: a destroy() in this turn makes no connection at all.
  event_loop().next_tick([this, to] { start_connect(to); }, tag());
  return *this;
}

// Node: internalConnect(): a non-blocking connect(2); its outcome, when the
// socket becomes writable, is SO_ERROR.
void socket::start_connect(const detail::sockaddr_any& to) {
  if (destroyed()) return;
  fd_ = ::socket(to.family(), SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  std::error_code ec;
  if (fd_ < 0) {
    ec = last_error();
  } else if (::connect(fd_, to.get(), to.length) != 0 && errno != EINPROGRESS) {
    ec = last_error();  // a Unix socket fails at once (ENOENT, ECONNREFUSED, EAGAIN)
  }
  if (ec) {
    event_loop().next_tick([this, ec] { after_connect(ec); }, tag());
    return;
  }
  event_loop().watch(fd_, POLLOUT, [this](short) {
    int err = 0;
    socklen_t len = sizeof err;
    if (::getsockopt(fd_, SOL_SOCKET, SO_ERROR, &err, &len) != 0) err = errno;
    after_connect(err ? std::error_code(err, std::system_category()) : std::error_code{});
  }, tag());
}

// Node: afterConnect(): 'connect' then 'ready', then what waited for them.
// Node emits both even when a 'connect' listener destroyed the socket, and
// writes made in a 'connect' listener go to the kernel at once: the sink is
// connected before the events.
void socket::after_connect(std::error_code ec) noexcept {
  if (destroyed()) return;
  if (ec && named_ && named_->attempt + 1 < named_->attempts.size()) {
    // Node: internalConnectMultiple(): the next address, on a new socket.
    if (!named_->first_error) named_->first_error = ec;
    if (fd_ >= 0) {  // its connect's watch has fired: nothing waits on it
      event_loop().forget_fd(fd_);
      ::close(fd_);
      fd_ = -1;
    }
    start_connect(named_->attempts[++named_->attempt]);
    return;
  }
  if (ec && named_ && named_->first_error) ec = named_->first_error;
  if (ec) {
    destroy(ec);
    connecting_ = false;
    return;
  }
  connecting_ = false;
  keep_remote(fd_);
  apply_options();
  touch();
  sink_->connected(fd_);
  emit(event::connect);
  // Node's held write and _final wait in 'connect' listeners added before
  // the user's later ones; here they start once 'connect' is out (a destroy()
  // in a 'connect' listener still writes the held one: see the sink).
  if (!destroyed()) sink_->start_held();
  emit(event::ready);
  if (destroyed()) return;
  source_->ready(fd_);
  if (!is_paused()) read(0);  // Node: afterConnect()'s read(0)
}

// Options set before the connection was up (Node keeps them for then).
void socket::apply_options() noexcept {
  if (no_delay_) set_no_delay(true);
  if (more_ && more_->keep_alive) set_keep_alive(true, *more_->keep_alive);
}

socket& socket::set_no_delay(bool no_delay) {
  no_delay_ = no_delay;
  if (fd_ >= 0 && !connecting_) {
    const int on = no_delay ? 1 : 0;
    ::setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &on, sizeof on);  // EOPNOTSUPP on a Unix socket: ignored
  }
  return *this;
}

socket& socket::set_keep_alive(bool enable, std::chrono::milliseconds initial_delay) {
  if (enable)
    more().keep_alive = initial_delay;
  else if (more_)
    more_->keep_alive.reset();
  if (fd_ >= 0 && !connecting_) {
    const int on = enable ? 1 : 0;
    ::setsockopt(fd_, SOL_SOCKET, SO_KEEPALIVE, &on, sizeof on);
    const int secs = static_cast<int>(initial_delay.count() / 1000);
    if (enable && secs > 0) ::setsockopt(fd_, IPPROTO_TCP, TCP_KEEPIDLE, &secs, sizeof secs);
  }
  return *this;
}

// Node: resetAndDestroy(): while connecting it waits for 'connect' (a
// 'connect' listener of its own) and resets then, so the peer sees
// ECONNRESET; a socket that never connects is destroyed with
// ERR_SOCKET_CLOSED.
socket& socket::reset_and_destroy() {
  if (destroyed()) return *this;
  if (connecting_) {
    once(event::connect, [this] { reset_now(); });
    return *this;
  }
  if (fd_ < 0) {
    destroy(make_error_code(errc::socket_closed));
    return *this;
  }
  reset_now();
  return *this;
}

// Node: _reset(): SO_LINGER 0, so close() sends an RST.
void socket::reset_now() noexcept {
  if (fd_ >= 0) {
    const linger l{1, 0};
    ::setsockopt(fd_, SOL_SOCKET, SO_LINGER, &l, sizeof l);
  }
  destroy();
}

// Node: the end of _destroy(): close the handle, and emit 'close'(hadError)
// from its close callback, after the 'error' that destroy() emits on the
// next tick. A server hears of it at once (Node: _connections--).
void socket::close_handle(std::error_code err) noexcept {
  if (named_) named_->lookup.cancel();  // Node: a lookup answered after destroy() is ignored
  event_loop().cancel(tag());
  if (more_) more_->idle_timer = more_->deadline_timer = 0;
  connecting_ = false;
  if (fd_ >= 0 && err && more_ && more_->before_error_close) {
    const auto f = std::move(more_->before_error_close);
    more_->before_error_close = nullptr;
    f(fd_, err);
  }
  if (fd_ >= 0) {
    event_loop().forget_fd(fd_);
    ::close(fd_);
    fd_ = -1;
  }
  // Node: _destroy() forgets the local address (_sockname = null): local()
  // has no fd to ask now. The remote one stays.
  if (server_) server_->connection_gone();
  event_loop().set_immediate([this, err] {
    event_arg arg;
    arg.error = err;
    emit(event::close, arg);
    sink_->after_close();
    if (server_) server_->forget(*this);  // deletes this socket: the last step
  }, tag());
}

// Node: unref()/ref(), on the handle: here the loop owners of the socket's
// waits (its connect and timers, the sink's POLLOUT, the source's POLLIN).
socket& socket::unref() {
  event_loop().unref(tag());
  event_loop().unref(sink_);
  event_loop().unref(source_);
  return *this;
}

socket& socket::ref() {
  event_loop().ref(tag());
  event_loop().ref(sink_);
  event_loop().ref(source_);
  return *this;
}

// ---- timers

socket& socket::set_timeout(std::chrono::milliseconds ms) {
  if (ms.count() == 0 && !more_) return *this;  // off, and never on
  extras& m = more();
  if (m.idle_timer) event_loop().clear_timeout(m.idle_timer);
  m.idle_timer = 0;
  m.idle_timeout = ms;
  if (ms.count() > 0 && !destroyed()) {
    m.last_active = std::chrono::steady_clock::now();
    arm_idle(ms);
  }
  return *this;
}

// Node: _unrefTimer(), which refreshes the timer, and so arms it again after
// it has fired.
void socket::touch() noexcept {
  if (!more_ || more_->idle_timeout.count() == 0) return;
  more_->last_active = std::chrono::steady_clock::now();
  if (more_->idle_timer == 0) arm_idle(more_->idle_timeout);
}

void socket::arm_idle(std::chrono::milliseconds delay) {
  more_->idle_timer = event_loop().set_timeout(delay, [this] { on_idle(); }, tag());
}

// Node: _onTimeout(). Activity since the timer was set moves it on rather
// than resetting a timer on every read and write.
void socket::on_idle() noexcept {
  extras& m = *more_;
  m.idle_timer = 0;
  const auto idle = std::chrono::steady_clock::now() - m.last_active;
  if (idle < m.idle_timeout) {
    arm_idle(std::chrono::ceil<std::chrono::milliseconds>(m.idle_timeout - idle));
    return;
  }
  emit(event::timeout);
}

void socket::arm_deadline() {
  if (!more_ || more_->write_deadline.count() == 0 || more_->deadline_timer != 0 || destroyed()) return;
  more_->deadline_timer = event_loop().set_timeout(more_->write_deadline, [this] { on_deadline(); }, tag());
}

void socket::clear_deadline() noexcept {
  if (!more_ || more_->deadline_timer == 0) return;
  event_loop().clear_timeout(more_->deadline_timer);
  more_->deadline_timer = 0;
}

// sluice's own: the peer has not taken what was written for the whole
// deadline. What it was owed is counted and the connection cut.
void socket::on_deadline() noexcept {
  more_->deadline_timer = 0;
  // The stream's length still counts the whole call in flight.
  more_->bytes_cut_off += writable_length() - sink_->in_flight_written();
  destroy(make_error_code(errc::write_timeout));
}

std::unique_ptr<socket> connect(std::uint16_t port, std::string_view host, const socket_options& options) {
  auto s = std::make_unique<socket>(options);
  s->connect(port, host);
  return s;
}

std::unique_ptr<socket> connect(std::string_view path, const socket_options& options) {
  auto s = std::make_unique<socket>(options);
  s->connect(path);
  return s;
}

}  // namespace sluice::net
