#include "sluice/detail/log_compressor.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <limits>

#include "sluice/detail/compress_file.h"
#include "sluice/base/detail/syscalls.h"

namespace sluice::detail {
namespace {

std::error_code errno_code() noexcept { return {errno, std::system_category()}; }

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
  sys.close(fd);
  return ec;
}

bool same_file(const struct stat& a, const struct stat& b) noexcept { return a.st_dev == b.st_dev && a.st_ino == b.st_ino; }

// Whether `path` names the file open as `fd` (the lock taken on `fd` is then
// the lock of the file the path names).
bool names(const std::string& path, int fd) noexcept {
  struct stat fs {}, ls {};
  return ::fstat(fd, &fs) == 0 && ::lstat(path.c_str(), &ls) == 0 && same_file(fs, ls);
}

// The byte of the log the chain lock takes: one no write reaches.
constexpr off_t chain_byte = std::numeric_limits<off_t>::max() - 1;

bool ofd_lock(int fd, short type) noexcept {
  struct flock fl {};
  fl.l_type = type;
  fl.l_whence = SEEK_SET;
  fl.l_start = chain_byte;
  fl.l_len = 1;
  int r;
  do {
    r = ::fcntl(fd, F_OFD_SETLKW, &fl);
  } while (r != 0 && errno == EINTR);
  return r == 0;
}

int flock_retry(int fd, int op) noexcept {
  int r;
  do {
    r = ::flock(fd, op);
  } while (r != 0 && errno == EINTR);
  return r;
}

}  // namespace

// ---- chain_lock

// Where OFD locks are not supported (an old kernel, some network file
// systems), the mutex alone: this process's rotations are still excluded.
log_compressor::chain_lock::chain_lock(log_compressor& c, int log_fd) noexcept : mutex_(c.chain_mutex_) {
  if (log_fd >= 0 && ofd_lock(log_fd, F_WRLCK)) fd_ = log_fd;
}

// The file the path names, opened for writing (an OFD write lock wants it)
// but never written. A path that is not a regular file is not rotated, so
// there is no other process's chain to exclude; a missing one is created,
// as the writer would (a rotation elsewhere could otherwise begin on the
// new file while the compressor renames, lockless).
log_compressor::chain_lock::chain_lock(log_compressor& c) noexcept : mutex_(c.chain_mutex_) {
  for (int tries = 0; tries < 100; ++tries) {
    struct stat st {};
    if (::lstat(c.path_.c_str(), &st) == 0 && !S_ISREG(st.st_mode)) return;
    const int fd = open_retry(c.path_.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_NONBLOCK, c.options_.permissions);
    if (fd < 0) return;
    if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || !ofd_lock(fd, F_WRLCK)) {
      sys.close(fd);
      return;
    }
    if (names(c.path_, fd)) {
      fd_ = fd;
      own_ = true;
      return;
    }
    sys.close(fd);  // rotated meanwhile: lock the new file
  }
}

log_compressor::chain_lock::~chain_lock() {
  if (fd_ < 0) return;
  if (own_)
    sys.close(fd_);  // the lock goes with its (only) fd
  else
    ofd_lock(fd_, F_UNLCK);
}

// ---- log_compressor

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
  for (const job& j : retry_) sys.close(j.fd);
}

bool log_compressor::queued(dev_t dev, ino_t ino) const noexcept {
  const auto same = [&](const job& j) { return j.dev == dev && j.ino == ino; };
  return std::any_of(queue_.begin(), queue_.end(), same) || std::any_of(retry_.begin(), retry_.end(), same);
}

// A file queued twice (by a rotation and by the recovery running beside it)
// is compressed once.
void log_compressor::push(const job& j) {
  {
    std::lock_guard lock(mutex_);
    if (!queued(j.dev, j.ino)) {
      queue_.push_back(j);
      wake_.notify_one();
      return;
    }
  }
  sys.close(j.fd);
}

std::error_code log_compressor::add(const std::string& plain) {
  std::error_code ec;
  const int fd = open_retry(plain.c_str(), O_RDONLY);
  struct stat st {};
  if (fd < 0) {
    ec = errno_code();
  } else if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    sys.close(fd);
    ec = std::make_error_code(std::errc::invalid_argument);
  } else {
    try {
      push({fd, st.st_dev, st.st_ino});
      return {};
    } catch (...) {
      sys.close(fd);
      ec = std::make_error_code(std::errc::not_enough_memory);
    }
  }
  {
    std::lock_guard lock(mutex_);
    ++failures_;
    last_error_ = ec;
  }
  tell(plain, ec, false);
  return ec;
}

void log_compressor::tell(const std::string& file, std::error_code ec, bool bad_twin) noexcept {
  if (!options_.on_compress_problem) return;
  static std::mutex one_at_a_time;  // add() (the writer's thread) and this thread
  try {
    std::lock_guard lock(one_at_a_time);
    options_.on_compress_problem({file, ec, bad_twin});
  } catch (...) {
  }
}

// At start: what a crash (or another run) left. Removes a temporary no live
// compressor holds, then looks at each plain rotated file: without a
// compressed twin it is queued; beside a twin that is its whole copy (the
// crash came before its removal) it is removed; beside anything else it is
// kept as it is, and said (see log_options::compress).
void log_compressor::recover() {
  const int fd = open_retry(tmp_.c_str(), O_RDWR | O_NONBLOCK);
  if (fd >= 0) {
    if (flock_retry(fd, LOCK_EX | LOCK_NB) == 0 && names(tmp_, fd)) sys.unlink(tmp_.c_str());
    sys.close(fd);
  }
  for (std::size_t i = 0; i < plain_.size(); ++i) recover_pair(i);
}

void log_compressor::recover_pair(std::size_t i) {
  struct stat ps {}, ts {};
  int plain_fd = -1, twin_fd = -1;
  {
    chain_lock chain(*this);
    if (::lstat(plain_[i].c_str(), &ps) != 0 || !S_ISREG(ps.st_mode)) return;
    if (::lstat(packed_[i].c_str(), &ts) != 0) {
      if (errno == ENOENT) (void)add(plain_[i]);
      return;
    }
    if (S_ISREG(ts.st_mode)) {
      plain_fd = open_retry(plain_[i].c_str(), O_RDONLY);
      twin_fd = open_retry(packed_[i].c_str(), O_RDONLY | O_NONBLOCK);
    }
  }
  // A twin that is no regular file (a directory, a symbolic link) is no
  // copy, and is not followed.
  if (!S_ISREG(ts.st_mode)) return tell(plain_[i], std::make_error_code(std::errc::file_exists), true);
  struct stat pf {}, tf {};
  if (plain_fd < 0 || twin_fd < 0 || ::fstat(plain_fd, &pf) != 0 || ::fstat(twin_fd, &tf) != 0 || !same_file(pf, ps) ||
      !same_file(tf, ts)) {
    if (plain_fd >= 0) sys.close(plain_fd);
    if (twin_fd >= 0) sys.close(twin_fd);
    return;  // moved meanwhile: a rotation or another process took care of it
  }
  // The costly part, outside the lock: decompressing the twin whole.
  bool same = false;
  (void)is_compressed_copy(twin_fd, plain_fd, options_.compress, same);
  sys.close(twin_fd);
  std::string name;
  {
    chain_lock chain(*this);
    const int k = find(pf.st_dev, pf.st_ino);
    struct stat now {};
    if (k < 0) {
      sys.close(plain_fd);
      return;  // past keep by now
    }
    name = plain_[static_cast<std::size_t>(k)];
    if (same && ::lstat(packed_[static_cast<std::size_t>(k)].c_str(), &now) == 0 && same_file(now, tf)) {
      sys.unlink(name.c_str());
      sys.close(plain_fd);
      return;
    }
    // Not its copy: both stay (the twin may be all that is left of older
    // lines, a run with compression, then one without), the plain file
    // plain. Or the twin changed meanwhile: looked at again at the next start.
    sys.close(plain_fd);
  }
  if (!same)   tell(name, std::make_error_code(std::errc::file_exists), true);
}

void log_compressor::wait_idle() {
  std::unique_lock lock(mutex_);
  idle_.wait(lock, [this] { return queue_.empty() && !busy_; });
}

std::size_t log_compressor::compressed() const {
  std::lock_guard lock(mutex_);
  return compressed_;
}

std::size_t log_compressor::failures() const {
  std::lock_guard lock(mutex_);
  return failures_;
}

std::error_code log_compressor::last_error() const {
  std::lock_guard lock(mutex_);
  return last_error_;
}

// The recovery first, then the queue, drained before stopping (a file
// rotated just before the log is closed is still compressed). A failed file
// waits for retry_at_; at the stop it is left plain, for the next start.
void log_compressor::run() {
  recover();
  std::unique_lock lock(mutex_);
  busy_ = false;
  idle_.notify_all();
  for (;;) {
    const auto due = [this] {
      return stop_ || !queue_.empty() || (!retry_.empty() && std::chrono::steady_clock::now() >= retry_at_);
    };
    if (retry_.empty())
      wake_.wait(lock, due);
    else
      wake_.wait_until(lock, retry_at_, due);
    if (queue_.empty()) {
      if (stop_) return;
      if (retry_.empty() || std::chrono::steady_clock::now() < retry_at_) continue;
      queue_.swap(retry_);
    }
    const job j = queue_.front();
    queue_.pop_front();
    busy_ = true;
    lock.unlock();
    std::string name = path_;
    bool packed = false;
    const std::error_code ec = compress(j, name, packed);
    if (ec) tell(name, ec, false);
    lock.lock();
    busy_ = false;
    if (ec) {
      ++failures_;
      last_error_ = ec;
      // One wait for all that failed since the last round, doubled each
      // round that fails.
      if (retry_.empty()) {
        retry_at_ = std::chrono::steady_clock::now() + backoff_;
        backoff_ = std::min(backoff_ * 2, std::chrono::seconds(64));
      }
      retry_.push_back(j);
    } else {
      sys.close(j.fd);
      if (packed) ++compressed_;
      backoff_ = std::chrono::seconds(1);
    }
    if (queue_.empty()) idle_.notify_all();
  }
}

int log_compressor::find(dev_t dev, ino_t ino) const noexcept {
  for (std::size_t i = 0; i < plain_.size(); ++i) {
    struct stat st {};
    if (::lstat(plain_[i].c_str(), &st) == 0 && st.st_dev == dev && st.st_ino == ino) return static_cast<int>(i);
  }
  return -1;
}

// The temporary, created if need be, locked, and empty. Another process's
// compressor may hold it: this one waits its turn. Once locked, the path
// must still name it (the holder renames it away when done, or removes it).
int log_compressor::open_temporary(std::error_code& ec) noexcept {
  for (;;) {
    const int fd = open_retry(tmp_.c_str(), O_RDWR | O_CREAT | O_NONBLOCK, options_.permissions);
    if (fd < 0) {
      ec = errno_code();
      return -1;
    }
    struct stat st {};
    if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
      ec = std::make_error_code(std::errc::invalid_argument);
      sys.close(fd);
      return -1;
    }
    // Where flock is not supported, goes on without it, as log_rotation does.
    (void)flock_retry(fd, LOCK_EX);
    if (!names(tmp_, fd)) {
      sys.close(fd);
      continue;
    }
    if (sys.ftruncate(fd, 0) != 0) {
      ec = errno_code();
      sys.unlink(tmp_.c_str());
      sys.close(fd);
      return -1;
    }
    return fd;
  }
}

// j.fd stays open: until the job is done the inode is the file's, so find()
// cannot take a newer file that reused it for this one. `name`: the plain
// file's name when last found; `packed`: it was compressed (not dropped).
std::error_code log_compressor::compress(const job& j, std::string& name, bool& packed) {
  {
    chain_lock chain(*this);
    const int i = find(j);
    if (i < 0) return {};  // left the chain (past keep) before its turn
    name = plain_[static_cast<std::size_t>(i)];
  }
  std::error_code ec;
  const int out = open_temporary(ec);
  if (out < 0) return ec;
  if (::lseek(j.fd, 0, SEEK_SET) < 0) ec = errno_code();  // a retry reads it again
  if (!ec) ec = compress_file(j.fd, out, options_.compress, options_.compress_level);
  if (!ec) ec = fsync_fd(out);
  {
    chain_lock chain(*this);
    const int i = find(j);
    // Removed while the temporary is still locked, so the path names ours.
    if (ec || i < 0) {
      sys.unlink(tmp_.c_str());
      sys.close(out);
      return ec;
    }
    if (sys.rename(tmp_.c_str(), packed_[static_cast<std::size_t>(i)].c_str()) != 0) {
      ec = errno_code();
      sys.unlink(tmp_.c_str());
      sys.close(out);
      return ec;
    }
  }
  // Its bytes are synced; the close only lets the next compressor in.
  sys.close(out);
  packed = true;
  // Outside the lock, so that a rotation does not wait for the disk; the
  // pair moves up together meanwhile, and find() says where it is now.
  if ((ec = fsync_dir(dir_))) return ec;  // both files stay: tried again, or recover() removes the plain one
  chain_lock chain(*this);
  const int i = find(j);
  if (i >= 0 && sys.unlink(plain_[static_cast<std::size_t>(i)].c_str()) != 0) return errno_code();
  return {};
}

}  // namespace sluice::detail
