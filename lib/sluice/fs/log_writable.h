// log_writable and make_log_writable(), as they were in factories.h (moved
// verbatim with fs/; the log file's own folder takes them next).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <system_error>

#include "sluice/sinks/log_options.h"
#include "sluice/stream/writable.h"

namespace sluice {

class log_file_sink;

/// A writable over a log_file_sink (what make_log_writable() returns), with
/// the file's own controls: reopen() on SIGHUP, the rotation counters.
///
///     auto log = sluice::make_log_writable("app.log");
///     auto hup = sluice::on_signal(sluice::loop::current(), SIGHUP, [&log] { log->reopen(); });
class log_writable : public writable {
 public:
  explicit log_writable(std::unique_ptr<log_file_sink> s, const writable_options& options = {});

  /// The sink, by its type (hides writable::get_sink(), which gives `sink&`).
  log_file_sink& get_sink() const noexcept { return *log_; }
  /// log_file_sink::reopen(): the file is closed and opened again by its
  /// path, for logrotate's move-then-SIGHUP.
  std::error_code reopen() noexcept;
  /// log_file_sink::rotations(), reopens(), fsyncs(), bytes_written().
  std::size_t rotations() const noexcept;
  std::size_t reopens() const noexcept;
  std::size_t fsyncs() const noexcept;
  std::uint64_t bytes_written() const noexcept;

 private:
  log_file_sink* log_;  // owned by the stream, as its sink
};

/// A writable over a new log_file_sink, which destroys the stream with an
/// error it meets outside a write or end (see
/// log_file_sink::report_errors_to_stream()). Throws stream_error when the
/// file cannot be opened. The handle is a log_writable (reopen(),
/// rotations()...); it converts to std::unique_ptr<writable>.
///
///     auto log = sluice::make_log_writable("app.log", {.max_size = 10 << 20, .keep = 3});
std::unique_ptr<log_writable> make_log_writable(const std::string& path, const log_options& options,
                                                const writable_options& stream_options);
std::unique_ptr<log_writable> make_log_writable(const std::string& path, const log_options& options = {});
/// The non-throwing twin: null and `ec` set on failure.
std::unique_ptr<log_writable> make_log_writable(const std::string& path, const log_options& options,
                                                const writable_options& stream_options,
                                                std::error_code& ec) noexcept;

}  // namespace sluice
