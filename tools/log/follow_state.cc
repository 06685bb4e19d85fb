#include "follow_state.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstring>

namespace sluice_tools {

namespace {

constexpr const char* header = "sluice-log follow state 1\n";

std::string errno_text(const char* what) { return std::string(what) + ": " + std::strerror(errno); }

// write() all of `s`, through short writes and EINTR.
bool write_all(int fd, const std::string& s) {
  std::size_t done = 0;
  while (done < s.size()) {
    const ssize_t n = ::write(fd, s.data() + done, s.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    done += static_cast<std::size_t>(n);
  }
  return true;
}

}  // namespace

bool take_fingerprint(int fd, std::uint64_t size, follow_fingerprint& fp) {
  const std::uint32_t want = size < follow_fingerprint_max ? static_cast<std::uint32_t>(size) : follow_fingerprint_max;
  unsigned char buf[follow_fingerprint_max];
  std::uint32_t got = 0;
  while (got < want) {
    const ssize_t n = ::pread(fd, buf + got, want - got, got);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return false;
    if (n == 0) break;  // shorter than its size said a moment ago: truncated
    got += static_cast<std::uint32_t>(n);
  }
  std::uint64_t h = 14695981039346656037ull;
  for (std::uint32_t i = 0; i < got; ++i) h = (h ^ buf[i]) * 1099511628211ull;
  fp = {got, h};
  return true;
}

follow_state::~follow_state() {
  if (lock_fd_ >= 0) ::close(lock_fd_);
  if (read_fd_ >= 0) ::close(read_fd_);
  if (dir_fd_ >= 0) ::close(dir_fd_);
}

bool follow_state::open(const std::string& dir, std::string& why) {
  if (::mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST) return why = errno_text("cannot make it"), false;
  struct stat st {};
  if (::lstat(dir.c_str(), &st) != 0) return why = errno_text("cannot look at it"), false;
  if (S_ISLNK(st.st_mode)) return why = "a symbolic link: refusing to follow it", false;
  if (!S_ISDIR(st.st_mode)) return why = "not a directory", false;
  if (st.st_uid != ::geteuid()) return why = "owned by another user", false;
  if ((st.st_mode & 022) != 0) return why = "writable by group or others (want mode 0700)", false;
  dir_fd_ = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (dir_fd_ < 0) return why = errno_text("cannot open it"), false;
  lock_fd_ = ::openat(dir_fd_, "lock", O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (lock_fd_ < 0) return why = errno_text("cannot open its lock"), false;
  if (::flock(lock_fd_, LOCK_EX | LOCK_NB) != 0)
    return why = errno == EWOULDBLOCK ? "another sluice-log follows with it" : errno_text("cannot lock it"), false;
  read_fd_ = ::openat(dir_fd_, "read", O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
  return true;
}

bool follow_state::load(std::vector<follow_entry>& entries, std::string& why) const {
  entries.clear();
  const int fd = ::openat(dir_fd_, "positions", O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ENOENT) return true;  // the first run on DIR
    why = errno_text("positions");
    return false;
  }
  std::string text;
  char buf[8192];
  for (;;) {
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      why = errno_text("positions");
      ::close(fd);
      return false;
    }
    if (n == 0) break;
    text.append(buf, static_cast<std::size_t>(n));
  }
  ::close(fd);
  if (text.rfind(header, 0) != 0) return why = "positions: not a sluice-log state file", false;
  std::size_t at = std::strlen(header);
  while (at < text.size()) {
    const std::size_t eol = text.find('\n', at);
    if (eol == std::string::npos) return why = "positions: its last line is torn", false;
    const std::string line = text.substr(at, eol - at);
    at = eol + 1;
    follow_entry e;
    unsigned current = 0;
    unsigned long long dev = 0, ino = 0, hash = 0, offset = 0, sent = 0;
    unsigned length = 0;
    int path_at = -1;
    if (std::sscanf(line.c_str(), "%u %llu %llu %u %llx %llu %llu %n", &current, &dev, &ino, &length, &hash, &offset,
                    &sent, &path_at) != 7 ||
        path_at < 0 || static_cast<std::size_t>(path_at) >= line.size() || length > follow_fingerprint_max)
      return why = "positions: a line is not an entry", false;
    e.current = current != 0;
    e.dev = static_cast<dev_t>(dev);
    e.ino = static_cast<ino_t>(ino);
    e.fp = {length, hash};
    e.offset = offset;
    e.sent = sent < offset ? offset : sent;
    e.path = line.substr(static_cast<std::size_t>(path_at));
    entries.push_back(std::move(e));
  }
  // How far the last run read: what it may have sent.
  if (read_fd_ >= 0) {
    char marks[16384];
    const ssize_t n = ::pread(read_fd_, marks, sizeof marks - 1, 0);
    marks[n > 0 ? n : 0] = '\0';
    for (const char* p = marks; *p;) {
      unsigned long long dev = 0, ino = 0, sent = 0;
      if (std::sscanf(p, "%llu %llu %llu", &dev, &ino, &sent) == 3)
        for (follow_entry& e : entries)
          if (e.dev == static_cast<dev_t>(dev) && e.ino == static_cast<ino_t>(ino) && sent > e.sent) e.sent = sent;
      const char* nl = std::strchr(p, '\n');
      if (!nl) break;
      p = nl + 1;
    }
  }
  return true;
}

void follow_state::mark_read(const std::vector<follow_entry>& marks) {
  if (read_fd_ < 0) return;
  std::string text;
  char buf[80];
  for (const follow_entry& m : marks) {
    // Fixed widths: the same files make the same length, so the file is
    // rewritten in place and truncated only when it shrinks (an ftruncate
    // for each read cost 8 ns a line).
    std::snprintf(buf, sizeof buf, "%20llu %20llu %20llu\n", static_cast<unsigned long long>(m.dev),
                  static_cast<unsigned long long>(m.ino), static_cast<unsigned long long>(m.sent));
    text += buf;
  }
  if (::pwrite(read_fd_, text.data(), text.size(), 0) != static_cast<ssize_t>(text.size())) return;
  if (text.size() < read_len_) (void)::ftruncate(read_fd_, static_cast<off_t>(text.size()));
  read_len_ = text.size();
}

bool follow_state::save(const std::vector<follow_entry>& entries, std::string& why) {
  std::string text = header;
  char buf[160];
  for (const follow_entry& e : entries) {
    std::snprintf(buf, sizeof buf, "%u %llu %llu %u %llx %llu %llu ", e.current ? 1u : 0u,
                  static_cast<unsigned long long>(e.dev), static_cast<unsigned long long>(e.ino), e.fp.length,
                  static_cast<unsigned long long>(e.fp.hash), static_cast<unsigned long long>(e.offset),
                  static_cast<unsigned long long>(e.sent));
    text += buf;
    text += e.path;  // parse_args() refuses a PATH with a newline
    text += '\n';
  }
  // A symbolic link planted as positions.tmp fails the open (ELOOP); any
  // file there is ours (DIR is 0700 and ours) and replaced.
  const int fd = ::openat(dir_fd_, "positions.tmp", O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
  bool ok = fd >= 0;
  if (!ok) why = errno_text("positions.tmp");
  if (ok && !write_all(fd, text)) ok = false, why = errno_text("positions.tmp: write");
  if (ok && ::fsync(fd) != 0) ok = false, why = errno_text("positions.tmp: fsync");
  if (fd >= 0) ::close(fd);
  if (ok && ::renameat(dir_fd_, "positions.tmp", dir_fd_, "positions") != 0) ok = false, why = errno_text("rename");
  // The rename itself is durable once the directory is synced.
  if (ok && ::fsync(dir_fd_) != 0) ok = false, why = errno_text("fsync");
  if (ok) ++saves_;
  else ++failures_;
  return ok;
}

}  // namespace sluice_tools
