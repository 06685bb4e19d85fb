#include "sluice/sinks/detail/open_file.h"

#include <fcntl.h>

#include <cerrno>
#include <system_error>

#include "sluice/base/errors.h"
#include "sluice/base/detail/syscalls.h"

namespace sluice::detail {

int open_fd(const std::string& path, int flags, mode_t permissions) noexcept {
  int fd;
  do {
    fd = sys.open(path.c_str(), flags | O_CLOEXEC, permissions);
  } while (fd < 0 && errno == EINTR);
  return fd;
}

int open_fd(const std::string& path, const file_options& options) noexcept {
  int flags = O_WRONLY | O_CREAT;
  switch (options.mode) {
    case file_options::open_mode::append: flags |= O_APPEND; break;
    case file_options::open_mode::truncate: flags |= O_TRUNC; break;
    case file_options::open_mode::exclusive: flags |= O_EXCL; break;
  }
  return open_fd(path, flags, options.permissions);
}

int open_or_throw(int fd, const std::string& path) {
  if (fd < 0) throw stream_error(errno, std::system_category(), "cannot open " + path);
  return fd;
}

}  // namespace sluice::detail
