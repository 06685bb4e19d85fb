#include "sluice/fs/read_stream.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <new>
#include <utility>

#include "sluice/sinks/detail/open_file.h"

namespace sluice {

std::unique_ptr<fd_readable> make_fd_readable(int fd, bool close_fd, const readable_options& options) {
  readable_options o = options;
  if (!o.high_water_mark) o.high_water_mark = fd_source::default_chunk_size;
  return std::make_unique<fd_readable>(std::make_unique<fd_source>(fd, close_fd), o);
}

std::unique_ptr<fd_readable> make_file_readable(const std::string& path, const readable_options& options) {
  const int fd = detail::open_or_throw(detail::open_fd(path, O_RDONLY), path);
  return make_fd_readable(fd, true, options);
}

std::unique_ptr<fd_readable> make_file_readable(const std::string& path, const readable_options& options,
                                                std::error_code& ec) noexcept {
  ec.clear();
  const int fd = detail::open_fd(path, O_RDONLY);
  if (fd < 0) {
    ec = {errno, std::system_category()};
    return nullptr;
  }
  std::unique_ptr<fd_source> source(new (std::nothrow) fd_source(fd, true));
  if (!source) {
    ::close(fd);
    ec = std::make_error_code(std::errc::not_enough_memory);
    return nullptr;
  }
  readable_options o = options;
  if (!o.high_water_mark) o.high_water_mark = fd_source::default_chunk_size;
  try {
    return std::make_unique<fd_readable>(std::move(source), o);
  } catch (const std::bad_alloc&) {
    ec = std::make_error_code(std::errc::not_enough_memory);
  } catch (const std::system_error& e) {  // invalid options
    ec = e.code();
  }
  return nullptr;
}

std::unique_ptr<fd_readable> make_file_readable(const std::string& path, std::error_code& ec) noexcept {
  return make_file_readable(path, readable_options{}, ec);
}

}  // namespace sluice
