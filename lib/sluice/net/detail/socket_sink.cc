// socket_sink: a net::socket's writable side (socket_sink.h).
#include "sluice/net/detail/socket_sink.h"

#include <poll.h>
#include <sys/socket.h>

#include <cerrno>

#include "sluice/base/errors.h"
#include "sluice/net/socket.h"
#include "sluice/base/detail/syscalls.h"

namespace sluice::net::detail {

socket_sink::~socket_sink() {
  if (loop_) loop_->cancel(this);
}

void socket_sink::write(std::string_view chunk, write_done done) {
  ++chunks_;
  out_.start(chunk);
  start(done, chunk.size());
}

void socket_sink::writev(const write_batch& batch, write_done done) {
  chunks_ += batch.size();
  out_.start(batch);
  start(done, batch.bytes());
}

void socket_sink::final(final_done done) {
  final_.emplace(done);
  if (ready_) do_final();
}

void socket_sink::destroy(std::error_code err, destroy_done done) noexcept {
  if (loop_) loop_->cancel(this);
  final_.reset();  // its stream is destroyed: nobody waits for it
  if (!done_ || !loop_) {
    done(err);
    return;
  }
  destroyed_ = true;
  if (held_ && ready_) {
    // Connected, destroyed in a 'connect' listener before the write that
    // waited could start: Node writes it in a 'connect' listener of its
    // own, added when it was written, so it lands; so it does here, and
    // is called back now, where Node's would have been.
    held_ = false;
    if (out_.write_some(error_)) {
      complete();
      done(err);
      return;
    }
    error_ = make_error_code(errc::destroyed);
  } else if (held_) {
    // No connection: called back after 'close' (after_close()), as Node's
    // write, which waits in a 'close' listener of its own.
    error_ = make_error_code(errc::socket_closed_before_connection);
    done(err);
    return;
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
    done(err);
    return;
  }
  loop_->next_tick([this] { complete(); }, this);
  done(err);
}

void socket_sink::start_held() noexcept {
  if (done_ && held_) {
    held_ = false;
    resume();
  }
  if (final_ && !done_) do_final();
}

void socket_sink::after_close() noexcept {
  if (done_ && held_) {
    held_ = false;
    complete();
  }
}

void socket_sink::start(write_done done, std::size_t bytes) noexcept {
  done_.emplace(done);
  error_.clear();
  call_bytes_ = bytes;
  call_start_ = out_.bytes_written();
  if (ready_)
    resume();
  else
    held_ = true;
}

void socket_sink::resume() noexcept {
  if (owner_) owner_->touch();
  if (out_.write_some(error_)) {
    complete();
    return;
  }
  if (owner_) owner_->arm_deadline();
  loop_->watch(out_.fd(), POLLOUT, [this](short) { resume(); }, this);
}

void socket_sink::complete() noexcept {
  // Decided before done(), which may start the next call (or destroy the
  // stream): the deadline stops once nothing written waits any more.
  if (owner_ && !destroyed_ && (error_ || owner_->writable_length() <= call_bytes_)) owner_->clear_deadline();
  const write_done done = *done_;
  done_.reset();
  done(error_);
  // Touch nothing here: done() may have destroyed the stream and this sink.
}

void socket_sink::do_final() noexcept {
  const final_done done = *final_;
  final_.reset();
  std::error_code ec;
  // ENOTCONN: the peer is gone already; Node takes it as done too.
  if (::shutdown(out_.fd(), SHUT_WR) != 0 && errno != ENOTCONN) ec = sluice::detail::last_error();
  done(ec);
}

}  // namespace sluice::net::detail
