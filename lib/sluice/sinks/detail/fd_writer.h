// fd_writer: the syscall half of fd_sink, shared with the worker thread of
// file_worker: one write or writev call's chunks, written to an fd.
#pragma once

#include <sys/types.h>
#include <sys/uio.h>

#include <cstddef>
#include <string_view>
#include <system_error>

#include "sluice/sinks/sink.h"

namespace sluice::detail {

/// Writes one sink call (a chunk, or a writev batch) to an fd: up to IOV_MAX
/// buffers a syscall, chunks that lie side by side in memory as one buffer,
/// partial writes resumed where the kernel stopped, EINTR retried, SIGPIPE
/// kept from killing the process. Any other errno is the call's error.
///
/// A call that fails after part of it was written (a short write, then
/// ENOSPC or EFBIG) knows which of its chunks landed whole: landed(). On a
/// regular file the bytes of the chunk it was in the middle of are cut off
/// again (ftruncate), so that the file ends where a whole chunk (normally a
/// line) ends, and a program that appends to it later does not glue its
/// first line onto a torn one. On a pipe or socket those bytes are gone.
///
/// It never waits: write_some() returns when the fd would block, and the
/// caller decides how to wait (fd_sink watches the fd through its loop; the
/// worker thread of file_worker polls). Used by one thread at a time.
class fd_writer {
 public:
  explicit fd_writer(int fd);
  /// Writes go to `fd` from now on (a log's new file after rotation or
  /// reopen); no call may be in progress. The counters go on counting.
  void reset(int fd) noexcept;

  /// Starts a call; the chunks must stay valid until it is done.
  void start(std::string_view chunk) noexcept;
  void start(const write_batch& batch) noexcept;
  /// Starts a call over `count` (>= 1) chunks of a batch, from `first`: a
  /// part of a writev (log_file_sink writes a batch in parts, rotating the
  /// file between them, so that no chunk is split across two files).
  void start(write_batch::iterator first, std::size_t count) noexcept {
    single_call_ = false;
    pos_ = first;
    chunks_ = chunks_left_ = count;
    pos_offset_ = 0;
  }

  /// Writes from the current position. True when the call is done: every
  /// byte written, or failed with `error` set. False when the fd would block
  /// (EAGAIN); call again once it is writable.
  bool write_some(std::error_code& error) noexcept;

  /// write_some() until done, waiting in poll() while the fd would block.
  /// For a thread of its own, never for a loop's.
  std::error_code write_all() noexcept;

  /// The chunks of the current call that were written whole, from its
  /// first: all of them once it succeeded; after an error, those before the
  /// chunk it failed in.
  std::size_t landed() const noexcept { return chunks_ - chunks_left_; }

  int fd() const noexcept { return fd_; }
  std::size_t syscalls() const noexcept { return syscalls_; }
  std::size_t bytes_written() const noexcept { return bytes_written_; }

 private:
  enum class kind { other, regular, pipe, socket };
  static kind kind_of(int fd) noexcept;
  std::size_t fill_iov(iovec* iov, std::size_t& count) noexcept;
  void advance(std::size_t n, std::size_t filled) noexcept;
  ssize_t write_iov(const iovec* iov, int n) noexcept;
  void cut_torn_chunk() noexcept;

  int fd_;
  kind kind_ = kind::other;
  bool ignore_sigpipe_ = false;  // SIGPIPE is already ignored process-wide

  // The call in flight: the chunk not yet fully written (pos_, or single_
  // for a write()), how far into it the kernel has taken, and what is left.
  std::string_view single_;
  bool single_call_ = false;
  write_batch::iterator pos_;
  std::size_t pos_offset_ = 0;
  std::size_t chunks_left_ = 0;
  std::size_t chunks_ = 0;  // in the call
  struct position {
    write_batch::iterator pos;
    std::size_t offset;
    std::size_t left;
  };
  position fill_end_{};

  std::size_t syscalls_ = 0;
  std::size_t bytes_written_ = 0;  // that stayed: cut_torn_chunk() takes back what it cuts
};

}  // namespace sluice::detail
