// log_rotation: the rotation and fsync state of a log file, the synchronous
// half of a rotated log (open, size accounting, rotation, reopen, fsync
// policy state), shared by log_file_sink, which runs it on a loop, and
// log_worker, which runs it on a file_worker's thread. It writes
// nothing itself: log_writer pairs it with the fd_writer that writes to fd().
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <system_error>
#include <vector>

#include "sluice/log_file/detail/log_compressor.h"
#include "sluice/log_file/log_options.h"
#include "sluice/sinks/sink.h"

namespace sluice::detail {

/// One log path and the fd open on it. Used by one thread at a time.
///
/// The writer reports the bytes that reached the file with wrote(); before
/// each chunk it calls prepare(), which rotates when the chunk would take a
/// non-empty file past max_size, so that a chunk is never split across two
/// files. After rotate() or reopen() fd() may have changed: the writer then
/// points its fd_writer at the new one.
///
/// A symbolic link is never followed (a link swapped in for the log would
/// send its lines to a file its owner chose): every open of the
/// path (the first, and those of rotate(), reopen() and of following
/// another writer's rotation) uses O_NOFOLLOW, so a path that is, or has
/// become, a symbolic link fails with ELOOP (std::errc::
/// too_many_symbolic_link_levels) and nothing is written to its target.
///
/// Rotation applies to a regular file only, named by the path itself: a
/// FIFO, a character device or a socket is written without rotation. This
/// is checked at each open, since the path may change.
///
/// Several processes may rotate one log (a tool run twice). With rotation
/// on, each part is written under an exclusive flock(2) on the file, taken
/// by prepare() and released by end_call(): under it, the writer checks that
/// the path still names its file, and if another process (or logrotate) has
/// moved it, closes it and opens the path again; the size is the file's own
/// (every writer's bytes); the rename chain runs under it. So no line ever
/// goes to a file after it was rotated, no rename overwrites another's, and
/// no file passes max_size (but for a chunk larger than max_size).
///
/// With options.compress, rotated files are app.log.N.gz (or .zst): rotate()
/// renames app.log to app.log.1 as ever, and a log_compressor thread
/// compresses it there (see log_compressor.h); each number holds a plain
/// or a compressed file, and keep counts both. The compressor's thread first
/// finishes what a crash left; the destructor waits for the files still
/// queued. The compressor's renames are excluded from every rotation of the
/// log, this process's and other processes' (log_compressor::chain_lock),
/// so two processes may compress one log.
class log_rotation {
 public:
  /// open(2) of a log: O_WRONLY | O_CREAT | O_APPEND | O_NOFOLLOW |
  /// O_CLOEXEC, EINTR retried.
  static int open_fd(const std::string& path, mode_t permissions) noexcept;

  /// Takes `fd` (closing it if this throws), open on `path`.
  log_rotation(int fd, const std::string& path, const log_options& options);
  /// Opens `path`; throws stream_error with the errno when it cannot.
  log_rotation(const std::string& path, const log_options& options);
  ~log_rotation() { close(); }
  log_rotation(const log_rotation&) = delete;
  log_rotation& operator=(const log_rotation&) = delete;

  /// Before a chunk of `next_chunk` bytes: rotates if it would not fit.
  /// With rotation on, takes the lock (if not held) until end_call().
  std::error_code prepare(std::size_t next_chunk) noexcept {
    if (options_.max_size == 0 || !rotatable_) return {};
    return prepare_shared(next_chunk);
  }
  /// After a call's last part (written or failed): releases the lock.
  void end_call() noexcept;
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
  /// Times the path was opened again because another writer had rotated it.
  std::size_t follows() const noexcept { return follows_; }
  std::size_t fsyncs() const noexcept { return fsyncs_; }
  /// A sync has failed (sticky): what was written before it may be lost.
  bool sync_failed() const noexcept { return sync_failed_; }
  std::uint64_t bytes_written() const noexcept { return bytes_written_; }
  /// The compressor of rotated files, or null without options.compress.
  log_compressor* compressor() const noexcept { return compressor_.get(); }

 private:
  std::error_code adopt(int fd) noexcept;
  std::error_code prepare_shared(std::size_t next_chunk) noexcept;
  std::error_code rotate_compressed() noexcept;
  std::error_code lock_current() noexcept;
  std::error_code open_again(std::size_t& count) noexcept;
  void check_kind() noexcept;

  std::string path_;
  std::vector<std::string> rotated_;  // app.log.1 ... app.log.<keep>
  log_options options_;
  int fd_ = -1;
  bool rotatable_ = false;  // see check_kind()
  bool locked_ = false;     // flock(fd_) held, until end_call()
  dev_t dev_ = 0;           // fd_'s file, to tell whether the path still names it
  ino_t ino_ = 0;
  std::uint64_t size_ = 0;
  std::uint64_t unsynced_ = 0;
  std::chrono::steady_clock::time_point dirty_since_{};  // the first unsynced write
  std::size_t rotations_ = 0;
  std::size_t reopens_ = 0;
  std::size_t follows_ = 0;  // the path opened again after another writer rotated
  std::size_t fsyncs_ = 0;
  bool sync_failed_ = false;
  std::uint64_t bytes_written_ = 0;
  // Last, so that it goes first: it may still be renaming in rotated_'s names.
  std::unique_ptr<log_compressor> compressor_;
};

}  // namespace sluice::detail
