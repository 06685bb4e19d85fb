#include "sluice/factories.h"

#include <fcntl.h>

#include <cerrno>
#include <new>
#include <utility>

#include "sluice/base/errors.h"
#include "sluice/sinks/fd_sink.h"
#include "sluice/sinks/file_sink.h"
#include "sluice/sinks/file_worker.h"
#include "sluice/sinks/log_file_sink.h"
#include "sluice/sinks/detail/open_file.h"
#include "sluice/sinks/worker_sink.h"
#include "sluice/sources/fd_source.h"

namespace sluice {

// ---- typed handles

log_writable::log_writable(std::unique_ptr<log_file_sink> s, const writable_options& options)
    : writable(std::move(s), options), log_(static_cast<log_file_sink*>(&writable::get_sink())) {}

std::error_code log_writable::reopen() noexcept { return log_->reopen(); }
std::size_t log_writable::rotations() const noexcept { return log_->rotations(); }
std::size_t log_writable::reopens() const noexcept { return log_->reopens(); }
std::size_t log_writable::fsyncs() const noexcept { return log_->fsyncs(); }
std::uint64_t log_writable::bytes_written() const noexcept { return log_->bytes_written(); }

fd_readable::fd_readable(std::unique_ptr<fd_source> s, const readable_options& options)
    : readable(std::move(s), options), fd_(static_cast<fd_source*>(&readable::get_source())) {}

void fd_readable::stop() noexcept { fd_->stop(); }
int fd_readable::fd() const noexcept { return fd_->fd(); }

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

std::unique_ptr<log_writable> make_log_writable(const std::string& path, const log_options& options,
                                                const writable_options& stream_options) {
  auto sink = std::make_unique<log_file_sink>(path, options);
  sink->report_errors_to_stream();
  return std::make_unique<log_writable>(std::move(sink), stream_options);
}

std::unique_ptr<log_writable> make_log_writable(const std::string& path, const log_options& options) {
  return make_log_writable(path, options, writable_options{});
}

std::unique_ptr<log_writable> make_log_writable(const std::string& path, const log_options& options,
                                                const writable_options& stream_options,
                                                std::error_code& ec) noexcept {
  auto sink = log_file_sink::open(path, options, ec);
  if (!sink) return nullptr;
  sink->report_errors_to_stream();
  try {
    return std::make_unique<log_writable>(std::move(sink), stream_options);
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

std::unique_ptr<fd_readable> make_fd_readable(int fd, bool close_fd, const readable_options& options) {
  readable_options o = options;
  if (!o.high_water_mark) o.high_water_mark = fd_source::default_chunk_size;
  return std::make_unique<fd_readable>(std::make_unique<fd_source>(fd, close_fd), o);
}

std::unique_ptr<fd_readable> make_file_readable(const std::string& path, const readable_options& options) {
  const int fd = detail::open_or_throw(detail::open_fd(path, O_RDONLY), path);
  return make_fd_readable(fd, true, options);
}

std::unique_ptr<fd_readable> make_file_readable(const std::string& path, std::error_code& ec,
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
