// An LD_PRELOAD shim for logd_relp_test.sh: every fsync() that succeeds
// appends one line to the file named by $FSYNC_LOG, the size of the synced
// file (fstat after the sync): the bytes of it known to be on disk. A RELP
// sender that reads this file when an answer arrives can tell whether the
// message answered was synced before the answer was sent.
#include <dlfcn.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>

extern "C" int fsync(int fd) {
  using fsync_fn = int (*)(int);
  static const auto real = reinterpret_cast<fsync_fn>(::dlsym(RTLD_NEXT, "fsync"));
  const int r = real(fd);
  struct stat st {};
  const char* path = std::getenv("FSYNC_LOG");
  if (r == 0 && path && ::fstat(fd, &st) == 0) {
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
