#include "sluice/log_file/detail/log_rotation.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <utility>

#include "sluice/base/errors.h"
#include "sluice/log_file/detail/compress_file.h"
#include "sluice/sinks/detail/open_file.h"
#include "sluice/base/detail/syscalls.h"

namespace sluice::detail {

namespace {

// rename() and unlink() where a missing source is no failure: rotated files
// may have gaps, and the log itself may have been removed under us.
std::error_code rename_if_there(const std::string& from, const std::string& to) noexcept {
  if (sys.rename(from.c_str(), to.c_str()) != 0 && errno != ENOENT) return last_error();
  return {};
}

std::error_code unlink_if_there(const std::string& path) noexcept {
  if (sys.unlink(path.c_str()) != 0 && errno != ENOENT) return last_error();
  return {};
}

std::uint64_t file_size(int fd) noexcept {
  struct stat st {};
  return ::fstat(fd, &st) == 0 ? static_cast<std::uint64_t>(st.st_size) : 0;
}

}  // namespace

// O_NOFOLLOW: a log is often in a directory its writer does not own alone
// (a service's, under a root daemon). A symbolic link swapped in for the
// path (mv app.log x; ln -s /etc/shadow app.log) would make the next open,
// at a rotation, a reopen or when following another writer's rotation,
// append to its target: every open refuses it with ELOOP instead.
int log_rotation::open_fd(const std::string& path, mode_t permissions) noexcept {
  return detail::open_fd(path, O_WRONLY | O_CREAT | O_APPEND | O_NOFOLLOW, permissions);
}

// Owns fd from the start: closes it if anything here throws.
log_rotation::log_rotation(int fd, const std::string& path, const log_options& options) try
    : path_(path), options_(options), fd_(fd), size_(file_size(fd)) {
  check_kind();
  rotated_.reserve(options.keep);
  for (unsigned i = 1; i <= options.keep; ++i) rotated_.push_back(path + "." + std::to_string(i));
  if (options.compress != log_options::compression::none) {
    if (!log_compression_available(options.compress))
      throw stream_error(std::make_error_code(std::errc::operation_not_supported),
                         "this sluice was built without " +
                             std::string(options.compress == log_options::compression::gzip ? "zlib" : "libzstd"));
    // Checked here, not by the codec at the first rotation: there a bad
    // level would fail every compression on the background thread.
    const compression_levels levels = log_compression_levels(options.compress);
    if (options.compress_level != 0 &&
        (options.compress_level < levels.min || options.compress_level > levels.max))
      throw stream_error(std::make_error_code(std::errc::invalid_argument),
                         "compress_level " + std::to_string(options.compress_level) + " is not within " +
                             std::to_string(levels.min) + " to " + std::to_string(levels.max));
    // Its thread's first job is the recovery of what a crash left.
    if (options.keep > 0) compressor_ = std::make_unique<log_compressor>(path, options.keep, options);
  }
} catch (...) {
  ::close(fd);
  throw;
}

log_rotation::log_rotation(const std::string& path, const log_options& options)
    : log_rotation(detail::open_or_throw(open_fd(path, options.permissions), path), path, options) {}

std::size_t log_rotation::fitting(write_batch::iterator& first, std::size_t left) const noexcept {
  const std::uint64_t max = options_.max_size;
  if (max == 0) {
    for (std::size_t i = 0; i < left; ++i) ++first;
    return left;
  }
  std::uint64_t size = size_;
  std::size_t n = 0;
  for (; n < left; ++n, ++first) {
    const std::size_t chunk = (*first).size();
    if (n > 0 && chunk > 0 && size > 0 && size + chunk > max) break;
    size += chunk;
  }
  return n;
}

// Rotation renames and removes names: only a regular file named by the
// path itself qualifies (see the class comment). The path may already name
// another file, or none, if another writer rotated it since the open: that
// is for lock_current() to follow, not a reason to stop rotating.
void log_rotation::check_kind() noexcept {
  struct stat fs {}, ls {};
  rotatable_ = ::fstat(fd_, &fs) == 0 && S_ISREG(fs.st_mode) &&
               (::lstat(path_.c_str(), &ls) == 0 ? S_ISREG(ls.st_mode) : errno == ENOENT);
  dev_ = fs.st_dev;
  ino_ = fs.st_ino;
}

// The lock, then the rotation if the chunk does not fit. After a rename,
// the new file is locked and checked as any other.
std::error_code log_rotation::prepare_shared(std::size_t next_chunk) noexcept {
  // Each round is a rotation, ours or another process's: the loop ends
  // once the file fits. It must not give up and go on unlocked, or two
  // writers would rotate at once and one rename would replace a file.
  for (;;) {
    if (const std::error_code ec = lock_current()) return ec;
    if (!rotatable_ || fd_ < 0) return {};  // the path names something else now
    if (next_chunk == 0 || size_ == 0 || size_ + next_chunk <= options_.max_size) return {};
    if (const std::error_code ec = rotate()) return ec;
  }
}

// Holds flock(fd_) on the file the path names, following the path when
// another writer rotated (or logrotate moved) the file under us; size_ is
// then the file's own. Where flock is not supported, goes on without it.
std::error_code log_rotation::lock_current() noexcept {
  // Until the lock held is on the file the path names: each round follows
  // one move of it by another writer.
  for (;;) {
    if (!locked_) {
      int r;
      do {
        r = ::flock(fd_, LOCK_EX);
      } while (r != 0 && errno == EINTR);
      locked_ = r == 0;
    }
    struct stat ls {};
    if (::lstat(path_.c_str(), &ls) == 0 && ls.st_dev == dev_ && ls.st_ino == ino_) {
      size_ = static_cast<std::uint64_t>(ls.st_size);
      return {};
    }
    // Moved or removed: the path is the log, so open it again (creating it).
    if (const std::error_code ec = open_again(follows_)) return ec;
    if (!rotatable_) return {};
  }
}

void log_rotation::end_call() noexcept {
  if (!locked_) return;
  locked_ = false;
  ::flock(fd_, LOCK_UN);
}

std::error_code log_rotation::rotate() noexcept {
  if (const std::error_code ec = sync_if_dirty()) return ec;
  if (compressor_) {
    if (const std::error_code ec = rotate_compressed()) return ec;
  } else if (rotated_.empty()) {
    if (const std::error_code ec = unlink_if_there(path_)) return ec;
  } else {
    // Only the files below the first missing number move up, into the gap;
    // with no gap, app.log.<keep-1> replaces the oldest, app.log.<keep>.
    std::size_t gap = 0;
    struct stat st {};
    while (gap + 1 < rotated_.size() && !(::lstat(rotated_[gap].c_str(), &st) != 0 && errno == ENOENT)) ++gap;
    for (std::size_t i = gap; i > 0; --i)
      if (const std::error_code ec = rename_if_there(rotated_[i - 1], rotated_[i])) return ec;
    if (const std::error_code ec = rename_if_there(path_, rotated_[0])) return ec;
  }
  const int fd = open_fd(path_, options_.permissions);
  if (fd < 0) return last_error();
  ++rotations_;
  return adopt(fd);
}

// rotate()'s renames when rotated files are compressed: each number holds
// app.log.N or app.log.N.gz (a file the compressor has not reached yet), so
// both move up; the compressor's own renames wait meanwhile. Then app.log
// is app.log.1, queued for compression.
std::error_code log_rotation::rotate_compressed() noexcept {
  const log_compressor& c = *compressor_;
  // fd_ is the file the path names (checked under its flock).
  log_compressor::chain_lock chain(*compressor_, fd_);
  std::size_t gap = 0;
  while (gap + 1 < rotated_.size() && (::access(c.plain(gap).c_str(), F_OK) == 0 ||
                                       ::access(c.packed(gap).c_str(), F_OK) == 0))
    ++gap;
  // The oldest, when there is no gap, goes in either form.
  if (const std::error_code ec = unlink_if_there(c.plain(gap))) return ec;
  if (const std::error_code ec = unlink_if_there(c.packed(gap))) return ec;
  for (std::size_t i = gap; i > 0; --i) {
    if (const std::error_code ec = rename_if_there(c.plain(i - 1), c.plain(i))) return ec;
    if (const std::error_code ec = rename_if_there(c.packed(i - 1), c.packed(i))) return ec;
  }
  if (const std::error_code ec = rename_if_there(path_, c.plain(0))) return ec;
  // A file that cannot be queued stays plain, and is queued at the next
  // start: no reason to fail the writes.
  (void)compressor_->add(c.plain(0));
  return {};
}

std::error_code log_rotation::reopen() noexcept { return open_again(reopens_); }

// Syncs (unless the policy is never), opens the path again (counted), closes
// the old fd.
std::error_code log_rotation::open_again(std::size_t& count) noexcept {
  const std::error_code synced = sync_if_dirty();
  const int fd = open_fd(path_, options_.permissions);
  if (fd < 0) return last_error();
  ++count;
  const std::error_code closed = adopt(fd);
  return synced ? synced : closed;
}

// Writes go to `fd` from now on; the old one is closed (its error returned,
// its lock released). The new fd is opened before the old is closed, so its
// number differs.
std::error_code log_rotation::adopt(int fd) noexcept {
  const std::error_code closed = close();
  fd_ = fd;
  size_ = file_size(fd);
  unsynced_ = 0;
  check_kind();
  return closed;
}

std::error_code log_rotation::close() noexcept {
  if (fd_ < 0) return {};
  locked_ = false;  // the lock goes with the fd
  // close() is not retried on EINTR: on Linux the fd is gone either way.
  const int r = sys.close(std::exchange(fd_, -1));
  return r != 0 ? last_error() : std::error_code{};
}

std::error_code log_rotation::sync() noexcept {
  ++fsyncs_;
  int r;
  do {
    r = sys.fsync(fd_);
  } while (r != 0 && errno == EINTR);
  if (r != 0) {
    const std::error_code ec = last_error();
    sync_failed_ = true;
    return ec;
  }
  unsynced_ = 0;
  return {};
}

std::error_code log_rotation::sync_if_dirty() noexcept {
  if (options_.fsync == log_options::fsync_policy::never || unsynced_ == 0 || fd_ < 0) return {};
  return sync();
}

std::error_code log_rotation::sync_if_due() noexcept {
  if (unsynced_ == 0 || fd_ < 0) return {};
  switch (options_.fsync) {
    case log_options::fsync_policy::every_bytes:
      if (unsynced_ >= options_.fsync_bytes) return sync();
      break;
    case log_options::fsync_policy::every_ms:
      if (std::chrono::steady_clock::now() >= dirty_since_ + options_.fsync_interval) return sync();
      break;
    default:
      break;
  }
  return {};
}

}  // namespace sluice::detail
