// An LD_PRELOAD shim for log_test.sh: every fsync() ends by sending the
// process the signal named in $FSYNC_SIGNAL (HUP or TERM). With --fsync end,
// sluice-log's only fsync is its last one, in the shutdown: the signal then
// arrives exactly where a second SIGTERM or a SIGHUP once killed it.
#include <dlfcn.h>
#include <signal.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>

extern "C" int fsync(int fd) {
  using fsync_fn = int (*)(int);
  static const auto real = reinterpret_cast<fsync_fn>(::dlsym(RTLD_NEXT, "fsync"));
  const int r = real(fd);
  const char* name = std::getenv("FSYNC_SIGNAL");
  ::kill(::getpid(), name && std::strcmp(name, "TERM") == 0 ? SIGTERM : SIGHUP);
  return r;
}
