#include "sluice/sinks/file_sink.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>

#include "sluice/errors.h"
#include "sluice/stream/writable.h"

namespace sluice {

int file_sink::open_fd(const std::string& path, const file_options& options) noexcept {
  int flags = O_WRONLY | O_CREAT | O_CLOEXEC;
  switch (options.mode) {
    case file_options::open_mode::append: flags |= O_APPEND; break;
    case file_options::open_mode::truncate: flags |= O_TRUNC; break;
    case file_options::open_mode::exclusive: flags |= O_EXCL; break;
  }
  int fd;
  do {
    fd = ::open(path.c_str(), flags, options.permissions);
  } while (fd < 0 && errno == EINTR);
  return fd;
}

file_sink::file_sink(int fd, const file_options& options) noexcept
    : fd_sink(fd, true), fsync_at_end_(options.fsync_at_end) {}

namespace {
// open_fd() or throw, before fd_sink's constructor can touch errno.
int open_or_throw(int fd, const std::string& path) {
  if (fd < 0) throw stream_error(errno, std::system_category(), "cannot open " + path);
  return fd;
}
}  // namespace

file_sink::file_sink(const std::string& path, const file_options& options)
    : file_sink(open_or_throw(open_fd(path, options), path), options) {}

std::unique_ptr<file_sink> file_sink::open(const std::string& path, const file_options& options,
                                           std::error_code& ec) noexcept {
  const int fd = open_fd(path, options);
  if (fd < 0) {
    ec = {errno, std::system_category()};
    return nullptr;
  }
  ec.clear();
  return std::unique_ptr<file_sink>(new (std::nothrow) file_sink(fd, options));
}

// The file is complete once every write is done: sync it if asked, then
// close it, so that a close error (NFS, quota) still reaches the caller.
void file_sink::final(final_done done) {
  std::error_code ec;
  if (fsync_at_end_ && ::fsync(fd()) != 0) ec = {errno, std::system_category()};
  const std::error_code closed = close_fd();
  done(ec ? ec : closed);
}

std::unique_ptr<writable> make_file_writable(const std::string& path, const file_options& options,
                                             const writable_options& stream_options) {
  return std::make_unique<writable>(std::make_unique<file_sink>(path, options), stream_options);
}

std::unique_ptr<writable> make_file_writable(const std::string& path, const file_options& options) {
  return make_file_writable(path, options, writable_options{});
}

}  // namespace sluice
