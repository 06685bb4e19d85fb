#include "sluice/factories.h"

#include <fcntl.h>

#include <cerrno>
#include <new>
#include <utility>

#include "sluice/errors.h"
#include "sluice/sinks/fd_sink.h"
#include "sluice/sinks/file_sink.h"
#include "sluice/sinks/file_worker.h"
#include "sluice/sinks/log_file_sink.h"
#include "sluice/sinks/open_file.h"
#include "sluice/sinks/worker_sink.h"
#include "sluice/sources/fd_source.h"

namespace sluice {

// ---- writables

std::unique_ptr<writable> make_fd_writable(int fd, bool close_fd, const writable_options& options) {
  return std::make_unique<writable>(std::make_unique<fd_sink>(fd, close_fd), options);
}

std::unique_ptr<writable> make_file_writable(const std::string& path, const file_options& options,
                                             const writable_options& stream_options) {
  return std::make_unique<writable>(std::make_unique<file_sink>(path, options), stream_options);
}

std::unique_ptr<writable> make_file_writable(const std::string& path, const file_options& options) {
  return make_file_writable(path, options, writable_options{});
}

std::unique_ptr<writable> make_log_writable(const std::string& path, const log_options& options,
                                            const writable_options& stream_options) {
  auto sink = std::make_unique<log_file_sink>(path, options);
  sink->report_errors_to_stream();
  return std::make_unique<writable>(std::move(sink), stream_options);
}

std::unique_ptr<writable> make_log_writable(const std::string& path, const log_options& options) {
  return make_log_writable(path, options, writable_options{});
}

std::unique_ptr<writable> make_log_writable(const std::string& path, const log_options& options,
                                            const writable_options& stream_options, std::error_code& ec) noexcept {
  auto sink = log_file_sink::open(path, options, ec);
  if (!sink) return nullptr;
  sink->report_errors_to_stream();
  try {
    return std::make_unique<writable>(std::move(sink), stream_options);
  } catch (const std::bad_alloc&) {
    ec = std::make_error_code(std::errc::not_enough_memory);
  } catch (const std::system_error& e) {  // invalid stream options
    ec = e.code();
  }
  return nullptr;
}

// Differs from Node: a byte stream over a worker defaults to a high-water
// mark of worker_high_water_mark, not 16 KiB. Each 'drain' costs a round trip
// to the worker thread; at 16 KiB a log producer spent ~10-20% of its CPU time
// on them (log_bench: 57,000 hand-overs for 5M lines, 9,000 at 1 MiB).
std::unique_ptr<writable> make_worker_writable(file_worker& worker, const writable_options& options) {
  if (options.high_water_mark || options.object_mode) return std::make_unique<writable>(worker.make_sink(), options);
  writable_options o = options;
  o.high_water_mark = worker_high_water_mark;
  return std::make_unique<writable>(worker.make_sink(), o);
}

std::unique_ptr<writable> make_worker_writable(file_worker& worker) {
  return make_worker_writable(worker, writable_options{});
}

// The sink waits for the worker and completes the rounds; the stream hands
// over what it holds and says what became of the writes.
std::error_code flush_sync(writable& stream) {
  auto* s = dynamic_cast<worker_sink*>(&stream.get_sink());
  if (s == nullptr) return make_error_code(errc::method_not_implemented);
  if (s->completing()) {
    // Inside this stream's own write_done: see flush_sync(). What is held
    // is handed over all the same, and waited for.
    stream.flush_held();
    if (const std::error_code ec = s->wait_written()) return ec;
    return stream.errored();
  }
  s->begin_flush();
  stream.flush_held();
  s->end_flush();
  if (const std::error_code ec = stream.errored()) return ec;
  if (stream.destroyed() && stream.writable_length() > 0) return make_error_code(errc::destroyed);
  return {};
}

// ---- readables

std::unique_ptr<readable> make_fd_readable(int fd, bool close_fd, const readable_options& options) {
  readable_options o = options;
  if (!o.high_water_mark) o.high_water_mark = fd_source::default_chunk_size;
  return std::make_unique<readable>(std::make_unique<fd_source>(fd, close_fd), o);
}

std::unique_ptr<readable> make_file_readable(const std::string& path, const readable_options& options) {
  const int fd = detail::open_or_throw(detail::open_fd(path, O_RDONLY), path);
  return make_fd_readable(fd, true, options);
}

std::unique_ptr<readable> make_file_readable(const std::string& path, std::error_code& ec,
                                             const readable_options& options) noexcept {
  ec.clear();
  const int fd = detail::open_fd(path, O_RDONLY);
  if (fd < 0) {
    ec = {errno, std::system_category()};
    return nullptr;
  }
  return make_fd_readable(fd, true, options);
}

}  // namespace sluice
