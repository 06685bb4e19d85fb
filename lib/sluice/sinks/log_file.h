// log_file: the synchronous half of a rotated log (open, size accounting,
// rotation, reopen, fsync policy state), shared by log_file_sink, which runs
// it on a loop, and file_worker's log mode, which runs it on the worker
// thread. It writes nothing itself: log_writer pairs it with the fd_writer
// that writes to fd().
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>
#include <system_error>
#include <vector>

#include "sluice/sinks/log_options.h"
#include "sluice/sinks/sink.h"

namespace sluice::detail {

/// One log path and the fd open on it. Used by one thread at a time.
///
/// The writer reports the bytes that reached the file with wrote(); before
/// each chunk it calls prepare(), which rotates when the chunk would take a
/// non-empty file past max_size, so that a chunk is never split across two
/// files. After rotate() or reopen() fd() may have changed: the writer then
/// points its fd_writer at the new one.
class log_file {
 public:
  /// open(2) of a log: O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, EINTR retried.
  static int open_fd(const std::string& path, mode_t permissions) noexcept;

  /// Takes `fd` (closing it if this throws), open on `path`.
  log_file(int fd, const std::string& path, const log_options& options);
  /// Opens `path`; throws stream_error with the errno when it cannot.
  log_file(const std::string& path, const log_options& options);
  ~log_file() { close(); }
  log_file(const log_file&) = delete;
  log_file& operator=(const log_file&) = delete;

  /// Before a chunk of `next_chunk` bytes: rotates if it would not fit.
  std::error_code prepare(std::size_t next_chunk) noexcept {
    const std::uint64_t max = options_.max_size;
    if (max != 0 && next_chunk > 0 && size_ > 0 && size_ + next_chunk > max) return rotate();
    return {};
  }
  /// How many of the `left` chunks from `first` (at least one) fit in the
  /// file as it is; `first` is moved past them.
  std::size_t fitting(write_batch::iterator& first, std::size_t left) const noexcept;
  /// `n` more bytes are in the file.
  void wrote(std::size_t n) noexcept {
    if (n == 0) return;
    if (unsynced_ == 0) dirty_since_ = std::chrono::steady_clock::now();
    size_ += n;
    unsynced_ += n;
    bytes_written_ += n;
  }

  /// app.log -> app.log.1 -> ... (keeping `keep`), then a fresh app.log.
  /// Synced first unless the policy is never.
  std::error_code rotate() noexcept;
  /// Syncs (unless the policy is never), opens the path again, closes the old fd.
  std::error_code reopen() noexcept;
  /// After a write: the every_bytes sync when due, and the every_ms sync
  /// when its deadline has passed.
  std::error_code sync_if_due() noexcept;
  /// fsync(2), EINTR retried.
  std::error_code sync() noexcept;
  /// sync() if the policy is not never and bytes are unsynced: before a file is closed.
  std::error_code sync_if_dirty() noexcept;
  /// Closes the fd (no sync); its error. Later calls do nothing.
  std::error_code close() noexcept;

  /// every_ms with unsynced bytes: when the sync is due. Else false.
  bool sync_deadline(std::chrono::steady_clock::time_point& when) const noexcept {
    if (options_.fsync != log_options::fsync_policy::every_ms || unsynced_ == 0 || fd_ < 0) return false;
    when = dirty_since_ + options_.fsync_interval;
    return true;
  }

  const std::string& path() const noexcept { return path_; }
  const log_options& options() const noexcept { return options_; }
  int fd() const noexcept { return fd_; }
  std::uint64_t size() const noexcept { return size_; }
  std::uint64_t unsynced() const noexcept { return unsynced_; }
  std::size_t rotations() const noexcept { return rotations_; }
  std::size_t reopens() const noexcept { return reopens_; }
  std::size_t fsyncs() const noexcept { return fsyncs_; }
  std::uint64_t bytes_written() const noexcept { return bytes_written_; }

 private:
  std::error_code adopt(int fd) noexcept;

  std::string path_;
  std::vector<std::string> rotated_;  // app.log.1 ... app.log.<keep>
  log_options options_;
  int fd_ = -1;
  std::uint64_t size_ = 0;
  std::uint64_t unsynced_ = 0;
  std::chrono::steady_clock::time_point dirty_since_{};  // the first unsynced write
  std::size_t rotations_ = 0;
  std::size_t reopens_ = 0;
  std::size_t fsyncs_ = 0;
  std::uint64_t bytes_written_ = 0;
};

}  // namespace sluice::detail
