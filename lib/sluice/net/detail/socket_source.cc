// socket_source: a net::socket's readable side (socket_source.h).
#include "sluice/net/detail/socket_source.h"

#include <poll.h>

#include <cerrno>
#include <string_view>

#include "sluice/net/socket.h"
#include "sluice/base/detail/syscalls.h"

namespace sluice::net::detail {

socket_source::~socket_source() {
  if (loop_) loop_->cancel(this);
}

void socket_source::read(std::size_t /*n*/) {
  if (fd_ < 0) {
    wanted_ = true;  // read once connected
    return;
  }
  wait_readable();
}

std::error_code socket_source::destroy(std::error_code err) noexcept {
  if (loop_) loop_->cancel(this);
  fd_ = -1;
  if (owner_) owner_->close_handle(err);
  return err;
}

void socket_source::ready(int fd) noexcept {
  fd_ = fd;
  if (wanted_) {
    wanted_ = false;
    wait_readable();
  }
}

void socket_source::wait_readable() noexcept {
  // POLLHUP and POLLERR wake it too: recv() then sees the end or the error.
  loop_->watch(fd_, POLLIN, [this](short) { read_now(); }, this);
}

void socket_source::read_now() noexcept {
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
    report_error(sluice::detail::last_error());
    return;
  }
}

}  // namespace sluice::net::detail
