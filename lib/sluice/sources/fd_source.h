// fd_source: reads a file descriptor into a readable, as Node's
// fs.ReadStream and net.Socket do.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <memory>
#include <system_error>

#include "sluice/base/function.h"
#include "sluice/sources/source.h"

namespace sluice {

/// A source over any file descriptor: file, pipe, stdin, socket, tty.
///
/// - read(n) reads up to chunk_size bytes (64 KiB unless told otherwise) on
///   the loop's next turn and pushes them; a read of 0 bytes is the end
///   (push_eof()). EINTR is retried.
/// - On a non-blocking fd, EAGAIN waits for POLLIN through the loop, then
///   reads again. A blocking fd (a terminal, or a pipe someone else left
///   blocking) blocks the thread in read(), as any blocking read does.
/// - Any other errno destroys the stream with that error (a
///   system_category code): 'error', then 'close'. So does memory that runs
///   out (ENOMEM), for the buffer or for a chunk the stream has to copy.
/// - stop() ends the reading early without losing what was read: the bytes
///   the stream holds still come out as 'data', then 'end', as at the end
///   of the data (a tool's SIGTERM; destroy() would drop them).
///
/// The bytes are read into one buffer that the source keeps and reuses. In
/// flowing mode with nothing buffered, a 'data' chunk is a view of that
/// buffer, so reading costs no copy and no allocation; a chunk that has to
/// be buffered is copied once, at its exact size.
///
///     auto in = sluice::make_fd_readable(STDIN_FILENO);
///     auto out = sluice::make_fd_writable(STDOUT_FILENO);
///     in->pipe(*out);  // cat
///     sluice::loop::current().run();
class fd_source : public source {
 public:
  static constexpr std::size_t default_chunk_size = 64 * 1024;

  /// `close_fd`: close the fd when the stream is destroyed.
  explicit fd_source(int fd, bool close_fd = false, std::size_t chunk_size = default_chunk_size);
  ~fd_source() override;
  fd_source(const fd_source&) = delete;
  fd_source& operator=(const fd_source&) = delete;

  void attach(loop& l) override;
  void read(std::size_t n) override;
  std::error_code destroy(std::error_code err) noexcept override;

  /// Reads nothing more: the read waiting for the loop (if any) is dropped,
  /// and the stream hears the end of the data now (push_eof()), so that what
  /// it has buffered still goes out, then 'end'. Nothing read is lost. Does
  /// nothing after the end, an error or destroy().
  void stop() noexcept;

  /// sluice's own, for a pipe with nothing in between (see
  /// pipe_zero_copy()): from now on the kernel moves the bytes from this fd
  /// to `out_fd`, and the stream sees none of them, only the end of the
  /// data (push_eof()) once the input is over. The call: splice(2) when
  /// either fd is a pipe, copy_file_range(2) from a file to a file,
  /// sendfile(2) from a file to anything else (a socket, /dev/null). One
  /// move per turn of the loop, up to move_size bytes; on a non-blocking
  /// fd, EAGAIN waits through the loop for the side that is not ready.
  ///
  /// `may_move` is asked before every move. When it says no, when the
  /// kernel refuses the call (EINVAL, EXDEV, ENOSYS, EOPNOTSUPP, EBADF for
  /// an O_APPEND file...; copy_file_range falls back on sendfile first), or
  /// when the call fails in any other way, the moves stop for good and the
  /// source reads into the stream again, from where the kernel stopped: the
  /// read or the write of the normal path then meets the error, if any, and
  /// reports it on its own side. Returns false, and changes nothing, when no
  /// call fits the two fds (a socket or terminal as input) or the source is
  /// over.
  bool move_to(int out_fd, inline_function<bool(), 32> may_move);
  /// True from a successful move_to() until the moves stop.
  bool moving() const noexcept { return move_ != move_call::none; }
  static constexpr std::size_t move_size = 1024 * 1024;

  int fd() const noexcept { return fd_; }
  std::size_t chunk_size() const noexcept { return chunk_size_; }
  /// Counters for tools and tests: read() calls made and bytes read.
  std::size_t syscalls() const noexcept { return syscalls_; }
  std::size_t bytes_read() const noexcept { return bytes_read_; }
  /// Bytes moved by the kernel in move_to()'s mode (never read here).
  std::size_t bytes_moved() const noexcept { return bytes_moved_; }

 private:
  enum class move_call : unsigned char { none, splice, copy_file_range, sendfile };

  void schedule_read() noexcept;
  void read_now() noexcept;
  ssize_t move_once() noexcept;
  void move_now() noexcept;
  void wait_movable() noexcept;
  void stop_moving() noexcept;
  void wait_readable() noexcept;
  void out_of_memory() noexcept;
  std::error_code close_fd() noexcept;

  int fd_;
  bool close_fd_;
  std::size_t chunk_size_;
  loop* loop_ = nullptr;
  // A pipe, socket or terminal: wait until it is readable, through the loop,
  // rather than in read(2), so that a blocking fd never holds the loop (and
  // its signal watches) while no data comes. A regular file is always ready.
  bool wait_first_ = false;
  bool over_ = false;  // the end pushed, an error reported, or destroyed
  // The stream asked for a read (read()) that nothing has answered yet: a
  // push, the end or an error. What the moves owe the stream when they stop.
  bool read_wanted_ = false;
  move_call move_ = move_call::none;
  int move_fd_ = -1;
  bool guard_sigpipe_ = false;  // the output can raise SIGPIPE, and it is not ignored
  inline_function<bool(), 32> may_move_;
  std::unique_ptr<char[]> buffer_;  // made at the first read
  std::size_t syscalls_ = 0;
  std::size_t bytes_read_ = 0;
  std::size_t bytes_moved_ = 0;
};

}  // namespace sluice
