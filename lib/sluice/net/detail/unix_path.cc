#include "sluice/net/detail/unix_path.h"

#include <fcntl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>

namespace sluice::net::detail {

namespace {
// The path of a Unix address bound in the file system; null for an abstract
// one (sun_path begins with NUL), which has no file to remove or chmod.
const char* path_of(const sockaddr_any& at) noexcept {
  if (at.family() != AF_UNIX) return nullptr;
  const auto* un = reinterpret_cast<const sockaddr_un*>(&at.storage);
  return un->sun_path[0] != '\0' ? un->sun_path : nullptr;
}

int fail_keeping_errno(int e) noexcept {
  errno = e;
  return -1;
}
}  // namespace

bool is_stale_socket(const sockaddr_any& at) noexcept {
  const char* path = path_of(at);
  struct stat before{};
  if (path == nullptr || ::lstat(path, &before) != 0 || !S_ISSOCK(before.st_mode)) return false;
  // Non-blocking: a live listener whose backlog is full answers EAGAIN, which
  // is as alive as a connection.
  const int probe = ::socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (probe < 0) return false;
  const bool refused = ::connect(probe, at.get(), at.length) != 0 && errno == ECONNREFUSED;
  ::close(probe);
  if (!refused) return false;
  // The same file as the one probed: not one somebody put there meanwhile.
  struct stat now{};
  return ::lstat(path, &now) == 0 && S_ISSOCK(now.st_mode) && now.st_ino == before.st_ino &&
         now.st_dev == before.st_dev;
}

int bind_listener(int fd, const sockaddr_any& at, std::optional<mode_t> mode, std::optional<gid_t> group) noexcept {
  const char* path = path_of(at);
  if (::bind(fd, at.get(), at.length) != 0) {
    if (errno != EADDRINUSE || path == nullptr) return -1;
    // The probe's own errno (EAGAIN from a full backlog) is not the answer.
    if (!is_stale_socket(at)) return fail_keeping_errno(EADDRINUSE);
    // The socket of a listener that died: Node's and libuv's listen() fail
    // here (EADDRINUSE), which keeps a supervised service down after a
    // crash. Differs from Node: sluice takes the path over.
    if (::unlink(path) != 0 && errno != ENOENT) return fail_keeping_errno(EADDRINUSE);
    if (::bind(fd, at.get(), at.length) != 0) return -1;
  }
  if (path == nullptr) return 0;
  // lchown and fchmodat(AT_SYMLINK_NOFOLLOW) (glibc 2.32 and later; older
  // ones refuse it with ENOTSUP): never through a symlink somebody put at
  // the path since the bind.
  if ((group && ::lchown(path, static_cast<uid_t>(-1), *group) != 0) ||
      (mode && ::fchmodat(AT_FDCWD, path, *mode & 07777, AT_SYMLINK_NOFOLLOW) != 0)) {
    const int e = errno;
    ::unlink(path);
    return fail_keeping_errno(e);
  }
  return 0;
}

}  // namespace sluice::net::detail
