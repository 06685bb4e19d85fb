// Node's net.Socket (lib/net.js): connect, _writeGeneric, _final, _destroy,
// the idle timeout, over the loop's public API. The bytes go through the
// io layer's fd_writer, as an fd_sink's do.
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
#include "sluice/net/server.h"
#include "sluice/sinks/detail/fd_writer.h"
#include "sluice/sinks/sink.h"
#include "sluice/sources/source.h"
#include "sluice/base/detail/syscalls.h"

namespace sluice::net {

namespace {
std::error_code last_error() noexcept { return {errno, std::system_category()}; }
}  // namespace

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

namespace detail {

// The writable side: Node's _writeGeneric/_writev and _final. Writes made
// before the connection is up wait for it (Node waits for 'connect').
class socket_sink final : public sink {
 public:
  explicit socket_sink(socket& owner) : owner_(&owner), out_(-1) {}
  ~socket_sink() override {
    if (loop_) loop_->cancel(this);
  }

  void attach(loop& l) override { loop_ = &l; }
  void write(std::string_view chunk, write_done done) override {
    ++chunks_;
    out_.start(chunk);
    start(done, chunk.size());
  }
  void writev(const write_batch& batch, write_done done) override {
    chunks_ += batch.size();
    out_.start(batch);
    start(done, batch.bytes());
  }
  // Before the connection one write waits for it and the others stay in the
  // stream's buffer, as in Node (whose _writeGeneric holds one): if the
  // connection fails, the one waiting hears ERR_SOCKET_CLOSED_BEFORE_CONNECTION
  // and the others the connection's error.
  bool has_writev() const noexcept override { return ready_; }
  // A turn's writes reach the kernel together, in one sendmsg().
  bool coalesce_writes() const noexcept override { return true; }

  // Node: Socket.prototype._final(): shutdown(SHUT_WR) once the writes are
  // out, deferred until 'connect' while connecting.
  void final(final_done done) override {
    final_.emplace(done);
    if (ready_) do_final();
  }
  bool has_final() const noexcept override { return true; }

  std::error_code destroy(std::error_code err) noexcept override {
    if (loop_) loop_->cancel(this);
    final_.reset();  // its stream is destroyed: nobody waits for it
    if (!done_ || !loop_) return err;
    destroyed_ = true;
    if (held_ && ready_) {
      // Connected, destroyed in a 'connect' listener before the write that
      // waited could start: Node writes it in a 'connect' listener of its
      // own, added when it was written, so it lands; so it does here, and
      // is called back now, where Node's would have been.
      held_ = false;
      if (out_.write_some(error_)) {
        complete();
        return err;
      }
      error_ = make_error_code(errc::destroyed);
    } else if (held_) {
      // No connection: called back after 'close' (after_close()), as Node's
      // write, which waits in a 'close' listener of its own.
      error_ = make_error_code(errc::socket_closed_before_connection);
      return err;
    } else {
      // A write that waits for the kernel. Differs from Node:
      // ERR_STREAM_DESTROYED where Node's libuv request would be called back
      // with ECANCELED or null.
      error_ = make_error_code(errc::destroyed);
      // Node calls it back as the handle closes (libuv cancels the request
      // in uv_close()), so after the 'error' that destroy() emits on the
      // next tick, and then the buffered writes (errorBuffer() waits for
      // the write in flight): an immediate, queued before the one of
      // 'close' (close_handle(), the source's destroy, comes after this).
      loop_->set_immediate([this] { complete(); }, this);
      return err;
    }
    loop_->next_tick([this] { complete(); }, this);
    return err;
  }

  // Accepted: connected from the start.
  void ready(int fd) noexcept {
    connected(fd);
    start_held();
  }
  // The connection is up: what is written from now on goes to the kernel.
  void connected(int fd) noexcept {
    out_.reset(fd);
    ready_ = true;
  }
  // After 'connect' (Node's pending write and _final wait in 'connect'
  // listeners): start what waited for it.
  void start_held() noexcept {
    if (done_ && held_) {
      held_ = false;
      resume();
    }
    if (final_ && !done_) do_final();
  }
  // The socket has emitted 'close': a write that waited for a connection
  // that never came hears it now.
  void after_close() noexcept {
    if (done_ && held_) {
      held_ = false;
      complete();
    }
  }
  void detach() noexcept { owner_ = nullptr; }

  std::size_t syscalls() const noexcept { return out_.syscalls(); }
  std::size_t bytes_written() const noexcept { return out_.bytes_written(); }
  std::size_t chunks() const noexcept { return chunks_; }
  /// Bytes of the call in flight that the kernel has taken already.
  std::size_t in_flight_written() const noexcept { return done_ ? out_.bytes_written() - call_start_ : 0; }

 private:
  void start(write_done done, std::size_t bytes) noexcept {
    done_.emplace(done);
    error_.clear();
    call_bytes_ = bytes;
    call_start_ = out_.bytes_written();
    if (ready_)
      resume();
    else
      held_ = true;
  }

  // Writes what the kernel takes; waits for POLLOUT for the rest, with the
  // write deadline running.
  void resume() noexcept {
    if (owner_) owner_->touch();
    if (out_.write_some(error_)) {
      complete();
      return;
    }
    if (owner_) owner_->arm_deadline();
    loop_->watch(out_.fd(), POLLOUT, [this](short) { resume(); }, this);
  }

  void complete() noexcept {
    // Decided before done(), which may start the next call (or destroy the
    // stream): the deadline stops once nothing written waits any more.
    if (owner_ && !destroyed_ && (error_ || owner_->writable_length() <= call_bytes_)) owner_->clear_deadline();
    const write_done done = *done_;
    done_.reset();
    done(error_);
    // Touch nothing here: done() may have destroyed the stream and this sink.
  }

  void do_final() noexcept {
    const final_done done = *final_;
    final_.reset();
    std::error_code ec;
    // ENOTCONN: the peer is gone already; Node takes it as done too.
    if (::shutdown(out_.fd(), SHUT_WR) != 0 && errno != ENOTCONN) ec = last_error();
    done(ec);
  }

  socket* owner_;
  loop* loop_ = nullptr;
  sluice::detail::fd_writer out_;
  std::optional<write_done> done_;
  std::optional<final_done> final_;
  std::error_code error_;
  std::size_t call_bytes_ = 0;
  std::size_t call_start_ = 0;  // out_.bytes_written() when the call started
  std::size_t chunks_ = 0;
  bool ready_ = false;
  bool held_ = false;  // done_ waits for the connection
  bool destroyed_ = false;
};

// The readable side: Node's onStreamRead. Reads once the kernel says the
// socket is readable, and only while the readable asks for more.
class socket_source final : public source {
 public:
  socket_source(socket& owner, std::size_t chunk_size)
      : owner_(&owner), chunk_size_(chunk_size == 0 ? 64 * 1024 : chunk_size) {}
  ~socket_source() override {
    if (loop_) loop_->cancel(this);
  }

  void attach(loop& l) override { loop_ = &l; }
  void read(std::size_t /*n*/) override {
    if (fd_ < 0) {
      wanted_ = true;  // read once connected
      return;
    }
    wait_readable();
  }
  // Node: _destroy(), whose last step closes the handle.
  std::error_code destroy(std::error_code err) noexcept override {
    if (loop_) loop_->cancel(this);
    fd_ = -1;
    if (owner_) owner_->close_handle(err);
    return err;
  }

  void ready(int fd) noexcept {
    fd_ = fd;
    if (wanted_) {
      wanted_ = false;
      wait_readable();
    }
  }
  void detach() noexcept { owner_ = nullptr; }
  std::size_t bytes_read() const noexcept { return bytes_read_; }

 private:
  void wait_readable() noexcept {
    // POLLHUP and POLLERR wake it too: recv() then sees the end or the error.
    loop_->watch(fd_, POLLIN, [this](short) { read_now(); }, this);
  }

  void read_now() noexcept {
    // The loop's shared buffer when it is free and large enough: the
    // readable copies what it keeps, so between reads this socket holds no
    // buffer at all. It is given back on every path out of here, from the
    // stack: a 'data' listener may destroy this socket.
    struct lease {
      loop* lender;
      ~lease() {
        if (lender) lender->return_read_buffer();
      }
    } shared{chunk_size_ <= loop::shared_read_size ? loop_ : nullptr};
    char* into = shared.lender ? shared.lender->borrow_read_buffer() : nullptr;
    if (!into) {
      shared.lender = nullptr;
      if (!buffer_) buffer_ = std::make_unique_for_overwrite<char[]>(chunk_size_);
      into = buffer_.get();
    }
    for (;;) {
      const ssize_t n = sluice::detail::sys.recv(fd_, into, chunk_size_, 0);
      if (n > 0) {
        bytes_read_ += static_cast<std::size_t>(n);
        if (owner_) owner_->touch();
        // A buffer of its own: a short read (the kernel had no more) takes
        // it with it, so that a connection between bursts holds none. A full
        // one keeps it for the next read.
        std::unique_ptr<char[]> last;
        if (buffer_ && static_cast<std::size_t>(n) < chunk_size_) last = std::move(buffer_);
        // Touch nothing after push(): a 'data' listener may destroy the stream.
        push(std::string_view(into, static_cast<std::size_t>(n)));
        return;
      }
      if (n == 0) {
        // Node's onStreamRead(): push(null), then read(0), so that 'end'
        // comes without a consumer once nothing is buffered.
        push_eof();
        stream().read(0);
        return;
      }
      if (errno == EINTR) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) {
        wait_readable();
        return;
      }
      report_error(last_error());
      return;
    }
  }

  socket* owner_;
  loop* loop_ = nullptr;
  int fd_ = -1;
  std::size_t chunk_size_;
  bool wanted_ = false;
  std::unique_ptr<char[]> buffer_;  // when the loop's is lent or too small (see read_now())
  std::size_t bytes_read_ = 0;
};

}  // namespace detail

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
             std::make_unique<detail::socket_sink>(*this), readable_side_options(options),
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
