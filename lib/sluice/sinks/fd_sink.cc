#include "sluice/sinks/fd_sink.h"

#include <poll.h>
#include <unistd.h>

#include <cerrno>

#include "sluice/base/errors.h"
#include "sluice/loop/loop.h"
#include "sluice/base/detail/syscalls.h"

namespace sluice {

fd_sink::fd_sink(int fd, bool close_fd) : fd_sink(fd, close_fd, fd_caps) {}
fd_sink::fd_sink(int fd, bool close_fd, sink_caps caps)
    : sink(caps, this), fd_(fd), close_fd_(close_fd), out_(fd) {}

fd_sink::~fd_sink() {
  if (loop_) loop_->cancel(this);
  close_fd();
}

std::error_code fd_sink::close_fd() noexcept {
  if (!close_fd_ || fd_ < 0) return {};
  close_fd_ = false;
  if (loop_) loop_->forget_fd(fd_);
  // close() is not retried on EINTR: on Linux the fd is gone either way.
  if (detail::sys.close(fd_) != 0) return {errno, std::system_category()};
  return {};
}

void fd_sink::write(std::string_view chunk, write_done done) {
  out_.start(chunk);
  start(done);
}

void fd_sink::writev(const write_batch& batch, write_done done) {
  out_.start(batch);
  start(done);
}

void fd_sink::start(write_done done) noexcept {
  done_.emplace(done);
  error_.clear();
  resume();
}

// Writes what the kernel takes; waits for POLLOUT for the rest.
void fd_sink::resume() noexcept {
  if (out_.write_some(error_)) {
    complete();
  } else {
    loop_->watch(fd_, POLLOUT, [this](short) { resume(); }, this);
  }
}

void fd_sink::complete() noexcept {
  const write_done done = *done_;
  done_.reset();
  done(error_, out_.landed());
}

void fd_sink::destroy(std::error_code err, destroy_done done) noexcept {
  if (done_ && loop_) {
    // A write is waiting for the fd: it will never finish now, and some of
    // its bytes may not have landed, so its callback must not hear success
    // (Differs from Node: net.Socket calls it back with null). Its completion
    // still comes from the loop, as every completion does.
    loop_->cancel(this);
    error_ = make_error_code(errc::destroyed);
    loop_->next_tick([this] { complete(); }, this);
  }
  const std::error_code closed = close_fd();
  done(err ? err : closed);
}

// A write waiting for POLLOUT is finished here, blocking in poll(): out_
// resumes exactly where the kernel stopped.
std::error_code fd_sink::drain_sync() noexcept {
  if (!done_) return {};
  if (loop_) loop_->cancel(this);
  done_.reset();
  const std::error_code ec = out_.write_all();
  return error_ ? error_ : ec;
}

std::error_code fd_sink::write_sync(const write_batch& batch) noexcept {
  out_.start(batch);
  return out_.write_all();
}

}  // namespace sluice
