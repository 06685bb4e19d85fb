#include "sluice/detail/log_compressor.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>

#include "sluice/detail/compress_file.h"
#include "sluice/detail/syscalls.h"

namespace sluice::detail {
namespace {

std::error_code errno_code() noexcept { return {errno, std::system_category()}; }

bool exists(const std::string& p) noexcept {
  struct stat st {};
  return ::lstat(p.c_str(), &st) == 0;
}

int open_retry(const char* path, int flags, mode_t mode = 0) noexcept {
  int fd;
  do {
    fd = sys.open(path, flags | O_CLOEXEC | O_NOFOLLOW, mode);
  } while (fd < 0 && errno == EINTR);
  return fd;
}

std::error_code fsync_fd(int fd) noexcept {
  int r;
  do {
    r = sys.fsync(fd);
  } while (r != 0 && errno == EINTR);
  return r != 0 ? errno_code() : std::error_code{};
}

// The rename into place is durable only once the directory is synced.
std::error_code fsync_dir(const std::string& dir) noexcept {
  const int fd = open_retry(dir.c_str(), O_RDONLY | O_DIRECTORY);
  if (fd < 0) return errno_code();
  const std::error_code ec = fsync_fd(fd);
  ::close(fd);
  return ec;
}

}  // namespace

log_compressor::log_compressor(const std::string& path, unsigned keep, const log_options& options)
    : path_(path), tmp_(path + std::string(compression_suffix(options.compress)) + ".tmp"), options_(options) {
  const auto slash = path.rfind('/');
  dir_ = slash == std::string::npos ? "." : slash == 0 ? "/" : path.substr(0, slash);
  for (unsigned i = 1; i <= keep; ++i) {
    plain_.push_back(path + "." + std::to_string(i));
    packed_.push_back(plain_.back() + std::string(compression_suffix(options.compress)));
  }
  thread_ = std::thread([this] { run(); });
}

log_compressor::~log_compressor() {
  {
    std::lock_guard lock(mutex_);
    stop_ = true;
  }
  wake_.notify_one();
  thread_.join();
}

std::error_code log_compressor::add(const std::string& plain) {
  const int fd = open_retry(plain.c_str(), O_RDONLY);
  if (fd < 0) return errno_code();
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    return std::make_error_code(std::errc::invalid_argument);
  }
  try {
    std::lock_guard lock(mutex_);
    queue_.push_back({fd, st.st_dev, st.st_ino});
  } catch (...) {
    ::close(fd);
    return std::make_error_code(std::errc::not_enough_memory);
  }
  wake_.notify_one();
  return {};
}

void log_compressor::recover() {
  std::lock_guard chain(chain_mutex_);
  sys.unlink(tmp_.c_str());
  for (std::size_t i = 0; i < plain_.size(); ++i) {
    struct stat st {};
    if (::lstat(plain_[i].c_str(), &st) != 0 || !S_ISREG(st.st_mode)) continue;
    // The compressed twin is renamed into place only once whole and synced.
    if (exists(packed_[i]))
      sys.unlink(plain_[i].c_str());
    else
      add(plain_[i]);
  }
}

void log_compressor::wait_idle() {
  std::unique_lock lock(mutex_);
  idle_.wait(lock, [this] { return queue_.empty() && !busy_; });
}

std::size_t log_compressor::compressed() const {
  std::lock_guard lock(mutex_);
  return compressed_;
}

std::error_code log_compressor::last_error() const {
  std::lock_guard lock(mutex_);
  return last_error_;
}

// The queue is drained before stopping: a file rotated just before the
// log is closed is still compressed.
void log_compressor::run() {
  std::unique_lock lock(mutex_);
  for (;;) {
    wake_.wait(lock, [this] { return stop_ || !queue_.empty(); });
    if (queue_.empty()) return;
    const job j = queue_.front();
    queue_.pop_front();
    busy_ = true;
    lock.unlock();
    const std::error_code ec = compress(j);
    lock.lock();
    busy_ = false;
    if (ec)
      last_error_ = ec;
    else
      ++compressed_;
    if (queue_.empty()) idle_.notify_all();
  }
}

int log_compressor::find(const job& j) const noexcept {
  for (std::size_t i = 0; i < plain_.size(); ++i) {
    struct stat st {};
    if (::lstat(plain_[i].c_str(), &st) == 0 && st.st_dev == j.dev && st.st_ino == j.ino) return static_cast<int>(i);
  }
  return -1;
}

// j.fd is closed only at the end: until then the inode is the file's, so
// find() cannot take a newer file that reused it for this one.
std::error_code log_compressor::compress(const job& j) {
  struct closer {
    int fd;
    ~closer() { ::close(fd); }
  } in{j.fd};
  {
    std::lock_guard chain(chain_mutex_);
    if (find(j) < 0) return {};  // left the chain (past keep) before its turn
  }
  const int out = open_retry(tmp_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, options_.permissions);
  if (out < 0) return errno_code();
  std::error_code ec = compress_file(in.fd, out, options_.compress, options_.compress_level);
  if (!ec) ec = fsync_fd(out);
  if (::close(out) != 0 && !ec) ec = errno_code();
  {
    std::lock_guard chain(chain_mutex_);
    const int i = find(j);
    if (ec || i < 0) {
      sys.unlink(tmp_.c_str());
      return ec;
    }
    if (sys.rename(tmp_.c_str(), packed_[static_cast<std::size_t>(i)].c_str()) != 0) {
      ec = errno_code();
      sys.unlink(tmp_.c_str());
      return ec;
    }
  }
  // Outside the lock, so that a rotation does not wait for the disk; the
  // pair moves up together meanwhile, and find() says where it is now.
  if ((ec = fsync_dir(dir_))) return ec;  // both files stay: recover() removes the plain one
  std::lock_guard chain(chain_mutex_);
  const int i = find(j);
  if (i >= 0 && sys.unlink(plain_[static_cast<std::size_t>(i)].c_str()) != 0) return errno_code();
  return {};
}

}  // namespace sluice::detail
