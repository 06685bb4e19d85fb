// The --tls-* files a tool is given: one that is not there, is not a
// regular file or cannot be read is said at once, as bad usage, and a private key that others may
// read is warned of.
#pragma once

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string>

namespace sluice_tools {

// Empty when `path` is a regular file this process can open for reading;
// else "OPT PATH: <reason>". A FIFO, a socket or a device is refused ("not
// a regular file"): an open of a FIFO blocks until someone writes to it, so
// the tool would hang at start, saying nothing. The open does not block
// either, in case the path is replaced by one between the stat and it.
inline std::string tls_file_problem(const char* opt, const std::string& path) {
  const auto problem = [&](const char* why) { return std::string(opt) + " " + path + ": " + why; };
  struct ::stat st {};
  if (::stat(path.c_str(), &st) != 0) return problem(std::strerror(errno));
  if (S_ISDIR(st.st_mode)) return problem(std::strerror(EISDIR));
  if (!S_ISREG(st.st_mode)) return problem("not a regular file");
  const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) return problem(std::strerror(errno));
  const bool regular = ::fstat(fd, &st) == 0 && S_ISREG(st.st_mode);
  ::close(fd);
  if (!regular) return problem("not a regular file");
  return {};
}

// A key file its group or others may read: a warning on standard error.
inline void warn_if_key_shared(const char* tool, const char* opt, const std::string& path) {
  struct ::stat st {};
  if (::stat(path.c_str(), &st) == 0 && (st.st_mode & 077) != 0)
    std::fprintf(stderr, "%s: warning: %s %s may be read by %s (mode %03o); chmod 600 it\n", tool, opt, path.c_str(),
                 (st.st_mode & 007) != 0 ? "others" : "its group", static_cast<unsigned>(st.st_mode & 0777));
}

}  // namespace sluice_tools
