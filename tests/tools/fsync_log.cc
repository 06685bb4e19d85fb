// An LD_PRELOAD shim for logd_relp_test.sh: every fsync() or fdatasync()
// that succeeds appends one line to the file named by $FSYNC_LOG, the size
// the synced file had when the sync began (fstat before it): the bytes of it
// known to be on disk (a byte written during the sync is not). A RELP sender
// that reads this file when an answer arrives can tell whether the message
// answered was written before a sync that returned before the answer was
// sent began.
#include <dlfcn.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>

namespace {

using fsync_fn = int (*)(int);

int logged(fsync_fn real, int fd) {
  struct stat st {};
  const bool sized = ::fstat(fd, &st) == 0;
  const int r = real(fd);
  const char* path = std::getenv("FSYNC_LOG");
  if (r == 0 && path && sized) {
    // O_APPEND and one write(2) a line: each line whole, whatever reads it.
    const int log = ::open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (log >= 0) {
      char line[32];
      const int n = std::snprintf(line, sizeof line, "%lld\n", static_cast<long long>(st.st_size));
      (void)!::write(log, line, static_cast<std::size_t>(n));
      ::close(log);
    }
  }
  return r;
}

}  // namespace

extern "C" int fsync(int fd) {
  static const auto real = reinterpret_cast<fsync_fn>(::dlsym(RTLD_NEXT, "fsync"));
  return logged(real, fd);
}

extern "C" int fdatasync(int fd) {
  static const auto real = reinterpret_cast<fsync_fn>(::dlsym(RTLD_NEXT, "fdatasync"));
  return logged(real, fd);
}
