#include "sluice/fs/write_stream.h"

#include <sys/stat.h>

#include <new>
#include <utility>

#include "sluice/sinks/file_worker.h"

namespace sluice {

// Differs from Node v20 (not from v22): see file_high_water_mark.
writable_options file_writable_options(const writable_options& options) {
  writable_options o = options;
  if (!o.high_water_mark && !o.object_mode) o.high_water_mark = file_high_water_mark;
  return o;
}

std::unique_ptr<fd_writable> make_fd_writable(int fd, bool close_fd, const writable_options& options) {
  struct stat st;
  const bool file = !options.high_water_mark && ::fstat(fd, &st) == 0 && S_ISREG(st.st_mode);
  return std::make_unique<fd_writable>(std::make_unique<fd_sink>(fd, close_fd),
                                       file ? file_writable_options(options) : options);
}

std::unique_ptr<file_writable> make_file_writable(const std::string& path, const file_options& options,
                                                  const writable_options& stream_options) {
  return std::make_unique<file_writable>(file_sink::open(path, options), file_writable_options(stream_options));
}

std::unique_ptr<file_writable> make_file_writable(const std::string& path, const file_options& options) {
  return make_file_writable(path, options, writable_options{});
}

std::unique_ptr<file_writable> make_file_writable(const std::string& path, const file_options& options,
                                                  const writable_options& stream_options,
                                                  std::error_code& ec) noexcept {
  auto sink = file_sink::open(path, options, ec);
  if (!sink) return nullptr;
  try {
    return std::make_unique<file_writable>(std::move(sink), file_writable_options(stream_options));
  } catch (const std::bad_alloc&) {
    ec = std::make_error_code(std::errc::not_enough_memory);
  } catch (const std::system_error& e) {  // invalid stream options
    ec = e.code();
  }
  return nullptr;
}

std::unique_ptr<file_writable> make_file_writable(const std::string& path, const file_options& options,
                                                  std::error_code& ec) noexcept {
  return make_file_writable(path, options, writable_options{}, ec);
}

std::unique_ptr<file_writable> make_file_writable(const std::string& path, std::error_code& ec) noexcept {
  return make_file_writable(path, file_options{}, writable_options{}, ec);
}

// Differs from Node: a byte stream over a worker defaults to a high-water
// mark of worker_high_water_mark, not 16 KiB. Each 'drain' costs a round trip
// to the worker thread; at 16 KiB a log producer spent ~10-20% of its CPU time
// on them (log_bench: 57,000 hand-overs for 5M lines, 9,000 at 1 MiB).
std::unique_ptr<worker_writable> make_worker_writable(file_worker& worker, const writable_options& options) {
  if (options.high_water_mark || options.object_mode)
    return std::make_unique<worker_writable>(worker.make_sink(), options);
  writable_options o = options;
  o.high_water_mark = worker_high_water_mark;
  return std::make_unique<worker_writable>(worker.make_sink(), o);
}

std::unique_ptr<worker_writable> make_worker_writable(file_worker& worker) {
  return make_worker_writable(worker, writable_options{});
}

}  // namespace sluice
