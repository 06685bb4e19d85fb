#include "sluice/syscalls.h"

#include <fcntl.h>
#include <stdio.h>
#include <unistd.h>

namespace sluice::detail {

namespace {
// open() is variadic: a function of fixed arguments to point at.
int open_call(const char* path, int flags, mode_t mode) { return ::open(path, flags, mode); }
}  // namespace

constexpr syscall_table real_syscalls{
    ::writev, ::sendmsg, ::read, open_call, ::close, ::fsync, ::rename, ::unlink, ::ftruncate,
};
constinit syscall_table sys = real_syscalls;

syscall_table swap_syscalls(const syscall_table& table) noexcept {
  const syscall_table old = sys;
  sys = table;
  return old;
}

}  // namespace sluice::detail
