#include "sluice/sinks/file_sink.h"

#include <unistd.h>

#include <cerrno>
#include <new>

#include "sluice/base/errors.h"
#include "sluice/sinks/detail/open_file.h"
#include "sluice/base/detail/syscalls.h"

namespace sluice {

file_sink::file_sink(int fd, const file_options& options) noexcept
    : fd_sink(fd, true, {.writev = true, .final = true, .coalesce = true}), fsync_at_end_(options.fsync_at_end) {}

std::unique_ptr<file_sink> file_sink::open(const std::string& path, const file_options& options) {
  const int fd = detail::open_or_throw(detail::open_fd(path, options), path);
  auto* s = new (std::nothrow) file_sink(fd, options);
  if (!s) {
    ::close(fd);
    throw std::bad_alloc();
  }
  return std::unique_ptr<file_sink>(s);
}

std::unique_ptr<file_sink> file_sink::open(const std::string& path, const file_options& options,
                                           std::error_code& ec) noexcept {
  const int fd = detail::open_fd(path, options);
  if (fd < 0) {
    ec = {errno, std::system_category()};
    return nullptr;
  }
  auto* s = new (std::nothrow) file_sink(fd, options);
  if (!s) {
    ::close(fd);  // the sink that would own it was never made
    ec = std::make_error_code(std::errc::not_enough_memory);
    return nullptr;
  }
  ec.clear();
  return std::unique_ptr<file_sink>(s);
}

std::unique_ptr<file_sink> file_sink::open(const std::string& path, std::error_code& ec) noexcept {
  return open(path, file_options{}, ec);
}

// The file is complete once every write is done: sync it if asked, then
// close it, so that a close error (NFS, quota) still reaches the caller.
void file_sink::final(final_done done) {
  std::error_code ec;
  if (fsync_at_end_ && detail::sys.fsync(fd()) != 0) ec = {errno, std::system_category()};
  const std::error_code closed = close_fd();
  done(ec ? ec : closed);
}

}  // namespace sluice
