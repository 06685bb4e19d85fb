#include "sluice/spool/detail/spool_dir.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "sluice/base/errors.h"
#include "sluice/spool/detail/spool_segment.h"
#include "sluice/base/detail/syscalls.h"

namespace sluice::detail {

namespace {

constexpr char position_magic[8] = {'S', 'L', 'S', 'P', 'P', 'O', 'S', '1'};

}  // namespace

spool_dir::~spool_dir() {
  if (position_fd_ >= 0) sys.close(position_fd_);
  if (lock_fd_ >= 0) sys.close(lock_fd_);
  if (dir_fd_ >= 0) sys.close(dir_fd_);
}

std::error_code spool_dir::open(const std::string& path) {
  if (path.empty()) return user_error("spool: the directory's name is empty");
  path_ = path;
  while (path_.size() > 1 && path_.back() == '/') path_.pop_back();
  struct stat st {};
  if (::lstat(path_.c_str(), &st) != 0) {
    if (errno != ENOENT) return last_error();
    if (sys.mkdir(path_.c_str(), 0700) != 0 && errno != EEXIST) return last_error();
    if (::lstat(path_.c_str(), &st) != 0) return last_error();
  }
  // The checks are on the name (lstat), then again on what was opened
  // (fstat), so that a directory swapped for a link in between is caught.
  if (S_ISLNK(st.st_mode)) return user_error("spool: the directory is a symbolic link: refusing to follow it");
  if (!S_ISDIR(st.st_mode)) return std::make_error_code(std::errc::not_a_directory);
  dir_fd_ = sys.open(path_.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC, 0);
  if (dir_fd_ < 0) return errno == ELOOP ? user_error("spool: the directory is a symbolic link: refusing to follow it")
                                         : last_error();
  if (::fstat(dir_fd_, &st) != 0) return last_error();
  // Whoever can write DIR can plant a segment that would be sent as ours.
  if (st.st_uid != ::geteuid()) return user_error("spool: the directory is owned by another user");
  if ((st.st_mode & 022) != 0) return user_error("spool: the directory is writable by group or others (want mode 0700)");
  const std::string lock = file("lock");
  lock_fd_ = sys.open(lock.c_str(), O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (lock_fd_ < 0) return last_error();
  if (::flock(lock_fd_, LOCK_EX | LOCK_NB) != 0)
    return errno == EWOULDBLOCK ? user_error("spool: the directory is in use by another process") : last_error();
  const std::string pos = file("position");
  position_fd_ = sys.open(pos.c_str(), O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (position_fd_ < 0) return last_error();
  return {};
}

std::error_code spool_dir::list(std::vector<found>& out) const {
  out.clear();
  const int fd = ::dup(dir_fd_);
  if (fd < 0) return last_error();
  DIR* d = ::fdopendir(fd);
  if (!d) {
    ::close(fd);
    return last_error();
  }
  ::rewinddir(d);
  std::error_code ec;
  while (const dirent* e = ::readdir(d)) {
    std::uint64_t seq = 0;
    if (!parse_segment_name(e->d_name, seq)) continue;
    struct stat st {};
    if (::fstatat(dir_fd_, e->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0) {
      ec = last_error();
      break;
    }
    if (!S_ISREG(st.st_mode) || st.st_uid != ::geteuid()) {
      ec = user_error("spool: a segment is not a regular file owned by this user");
      break;
    }
    out.push_back({seq, static_cast<std::uint64_t>(st.st_size)});
  }
  ::closedir(d);
  std::sort(out.begin(), out.end(), [](const found& a, const found& b) { return a.seq < b.seq; });
  return ec;
}

spool_position spool_dir::read_position() const {
  char b[24];
  if (::pread(position_fd_, b, sizeof b, 0) != static_cast<ssize_t>(sizeof b)) return {};
  if (std::memcmp(b, position_magic, 4) != 0) return {};
  std::uint32_t crc = 0;
  std::memcpy(&crc, b + 4, 4);
  if (crc != crc32c(b + 8, 16)) return {};
  spool_position p;
  std::memcpy(&p.seq, b + 8, 8);
  std::memcpy(&p.offset, b + 16, 8);
  return p;
}

std::error_code spool_dir::write_position(const spool_position& p) {
  // Host byte order: the file never leaves the machine that wrote it.
  char b[24];
  std::memcpy(b, position_magic, 4);
  std::memcpy(b + 8, &p.seq, 8);
  std::memcpy(b + 16, &p.offset, 8);
  const std::uint32_t crc = crc32c(b + 8, 16);
  std::memcpy(b + 4, &crc, 4);
  if (sys.pwrite(position_fd_, b, sizeof b, 0) != static_cast<ssize_t>(sizeof b)) return last_error();
  return {};
}

std::error_code spool_dir::sync() const {
  if (sys.fsync(dir_fd_) != 0) return last_error();
  return {};
}

}  // namespace sluice::detail
