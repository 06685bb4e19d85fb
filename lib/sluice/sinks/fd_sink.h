// fd_sink: writes to a file descriptor with writev, batching a turn's writes.
#pragma once

#include <sys/uio.h>

#include <cstddef>
#include <optional>
#include <string_view>
#include <system_error>
#include <vector>

#include "sluice/sinks/sink.h"

namespace sluice {

/// A sink over any file descriptor: file, pipe, socket, tty, /dev/null.
///
/// - Everything written in one turn of the loop reaches the kernel in as few
///   writev() calls as possible: up to IOV_MAX buffers each, and chunks that
///   lie side by side in memory (small ones always do) as one buffer.
/// - A partial write resumes exactly where the kernel stopped; EINTR is
///   retried. On a non-blocking fd, EAGAIN waits for POLLOUT through the loop.
/// - Any other errno becomes the stream's error (a system_category code).
///   EPIPE never kills the process: SIGPIPE is blocked around writes to pipes
///   and suppressed with MSG_NOSIGNAL on sockets.
///
///     sluice::writable out(std::make_unique<sluice::fd_sink>(STDOUT_FILENO));
class fd_sink : public sink {
 public:
  /// `close_fd`: close the fd when the stream is destroyed.
  explicit fd_sink(int fd, bool close_fd = false);
  ~fd_sink() override;

  void attach(loop& l) override { loop_ = &l; }
  void write(std::string_view chunk, write_done done) override;
  void writev(const write_batch& batch, write_done done) override;
  bool has_writev() const noexcept override { return true; }
  std::error_code destroy(std::error_code err) noexcept override;
  bool coalesce_writes() const noexcept override { return true; }

  int fd() const noexcept { return fd_; }
  /// Counters for tools and tests: syscalls made and bytes written.
  std::size_t syscalls() const noexcept { return syscalls_; }
  std::size_t bytes_written() const noexcept { return bytes_written_; }

 protected:
  /// Closes the fd if owned; the error of close(), if any.
  std::error_code close_fd() noexcept;

 private:
  enum class kind { other, pipe, socket };
  void start(write_done done) noexcept;
  void resume() noexcept;
  void complete() noexcept;
  // Writes from the current position; returns true when the call is done
  // (or failed, with error_ set), false when the fd would block.
  bool write_some() noexcept;
  std::size_t fill_iov() noexcept;
  void advance(std::size_t n, std::size_t filled) noexcept;
  ssize_t write_iov(const iovec* iov, int n) noexcept;

  int fd_;
  bool close_fd_;
  kind kind_ = kind::other;
  loop* loop_ = nullptr;

  // The call in flight: the chunk not yet fully written (pos_, or single_
  // for a write()), how far into it the kernel has taken, and what is left.
  std::string_view single_;
  bool single_call_ = false;
  write_batch::iterator pos_;
  std::size_t pos_offset_ = 0;
  std::size_t chunks_left_ = 0;
  struct position {
    write_batch::iterator pos;
    std::size_t offset;
    std::size_t left;
  };
  position fill_end_{};
  std::optional<write_done> done_;
  std::error_code error_;
  bool ignore_sigpipe_ = false;  // SIGPIPE is already ignored process-wide
  std::vector<iovec> iov_;  // IOV_MAX entries, filled up to iov_count_
  std::size_t iov_count_ = 0;

  std::size_t syscalls_ = 0;
  std::size_t bytes_written_ = 0;
};

}  // namespace sluice
