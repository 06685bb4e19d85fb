// syscalls: the system calls through which the sinks, sources and sockets
// reach the kernel (write, read, open, fsync, close, rename, unlink,
// ftruncate; sendmsg and recv), as one table of function pointers. The
// library never changes it; a test swaps entries to make calls fail at chosen or random points
// (tests/support/fault_injection.h), or to crash the process at each
// durable step (tests/support/crash_points.h), with no cost beyond the call
// through a pointer that a shared library's call makes anyway. Every call
// that changes what a file or directory holds on the durable paths (the log
// and its rotation and compression, the spool) goes through it.
#pragma once

#include <signal.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/uio.h>

namespace sluice::detail {

struct syscall_table {
  ssize_t (*writev)(int fd, const iovec* iov, int count);
  ssize_t (*sendmsg)(int fd, const msghdr* msg, int flags);
  ssize_t (*read)(int fd, void* buf, size_t count);
  int (*open)(const char* path, int flags, mode_t mode);
  int (*close)(int fd);
  int (*fsync)(int fd);
  int (*rename)(const char* from, const char* to);
  int (*unlink)(const char* path);
  int (*ftruncate)(int fd, off_t length);
  // The durable steps of the compressor (write), the spool's position file
  // (pwrite) and its directory (mkdir); fdatasync for a path that syncs
  // data only.
  ssize_t (*write)(int fd, const void* buf, size_t count);
  ssize_t (*pwrite)(int fd, const void* buf, size_t count, off_t offset);
  int (*fdatasync)(int fd);
  int (*mkdir)(const char* path, mode_t mode);
  // The calls that move bytes from fd to fd inside the kernel
  // (fd_source::move_to()); a test makes them refuse to check the fallback.
  ssize_t (*splice)(int fd_in, loff_t* off_in, int fd_out, loff_t* off_out, size_t len, unsigned int flags);
  ssize_t (*copy_file_range)(int fd_in, loff_t* off_in, int fd_out, loff_t* off_out, size_t len, unsigned int flags);
  ssize_t (*sendfile)(int out_fd, int in_fd, off_t* offset, size_t count);
  // A net::socket's reads (its sendmsg() is the one above, through fd_writer).
  ssize_t (*recv)(int fd, void* buf, size_t len, int flags);
};

/// The calls in use: the C library's, unless a test has swapped some.
/// The library's code reads it; tests change it only through
/// swap_syscalls(), so that the library's copy is the one changed.
extern syscall_table sys;
/// The C library's calls, for a test to fall back on.
extern const syscall_table real_syscalls;
/// For tests: puts `table` in use and returns the table that was. Only
/// while no stream or worker thread makes a call.
syscall_table swap_syscalls(const syscall_table& table) noexcept;

/// SIGPIPE blocked for this thread while it lives, around a write to a pipe
/// (or a splice or sendfile into a pipe or socket) whose reader may be
/// gone: the call fails with EPIPE, or returns short, instead of killing the
/// process. The destructor takes a SIGPIPE that became pending meanwhile,
/// whatever the call returned (a write the reader's leaving cuts short
/// raises one too), but never one already pending for someone else; so
/// does swallow(), earlier. errno is kept.
class sigpipe_block {
 public:
  sigpipe_block() noexcept;
  ~sigpipe_block();
  sigpipe_block(const sigpipe_block&) = delete;
  sigpipe_block& operator=(const sigpipe_block&) = delete;
  void swallow() noexcept;

 private:
  sigset_t old_mask_;
  bool was_pending_;
};

}  // namespace sluice::detail
