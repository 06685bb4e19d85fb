// fd_sink: writes to a file descriptor with writev, batching a turn's writes.
#pragma once

#include <cstddef>
#include <optional>
#include <string_view>
#include <system_error>

#include "sluice/sinks/detail/fd_writer.h"
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
/// - A writev that fails partway (a short write, then ENOSPC) calls back the
///   chunks written whole with success and the others with the error; on a
///   regular file the bytes of the chunk it stopped in are cut off again
///   (ftruncate), so that the file ends where a whole chunk ends.
///
///     sluice::writable out(std::make_unique<sluice::fd_sink>(STDOUT_FILENO));
class fd_sink : public sink, public sync_sink {
 public:
  /// `close_fd`: close the fd when the stream is destroyed.
  explicit fd_sink(int fd, bool close_fd = false);
  ~fd_sink() override;

  void attach(loop& l) override { loop_ = &l; }
  void write(std::string_view chunk, write_done done) override;
  void writev(const write_batch& batch, write_done done) override;
  void destroy(std::error_code err, destroy_done done) noexcept override;
  // The exit path (sync_sink).
  std::error_code drain_sync() noexcept override;
  std::error_code write_sync(const write_batch& batch) noexcept override;
  std::size_t landed_sync() const noexcept override { return out_.landed(); }

  int fd() const noexcept { return fd_; }
  /// Counters for tools and tests: syscalls made and bytes written.
  std::size_t syscalls() const noexcept { return out_.syscalls(); }
  std::size_t bytes_written() const noexcept { return out_.bytes_written(); }

 protected:
  /// For a sink built on this one that adds to its capabilities (file_sink's
  /// final).
  fd_sink(int fd, bool close_fd, sink_caps caps);
  /// What fd_sink implements: writev, and a turn's writes coalesced for it.
  static constexpr sink_caps fd_caps{.writev = true, .coalesce = true};

  /// Closes the fd if owned; the error of close(), if any.
  std::error_code close_fd() noexcept;

 private:
  void start(write_done done) noexcept;
  void resume() noexcept;
  void complete() noexcept;

  int fd_;
  bool close_fd_;
  loop* loop_ = nullptr;
  detail::fd_writer out_;  // the syscalls, shared with file_worker's thread
  std::optional<write_done> done_;
  std::error_code error_;
};

}  // namespace sluice
