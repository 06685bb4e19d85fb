// log_writable: the log file's handle, a stream that knows its
// log_file_sink (reopen() on SIGHUP, the rotation counters), and
// make_log_writable(), its factory.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <system_error>

#include "sluice/log_file/log_file_sink.h"
#include "sluice/log_file/log_options.h"
#include "sluice/stream/typed_stream.h"
#include "sluice/stream/writable.h"

namespace sluice {

/// A writable over a log_file_sink (what make_log_writable() returns), with
/// the file's own controls; get_sink() gives the log_file_sink itself.
///
///     auto log = sluice::make_log_writable("app.log");
///     auto hup = sluice::on_signal(sluice::loop::current(), SIGHUP, [&log] { log->reopen(); });
class log_writable : public typed_writable<log_file_sink> {
 public:
  using typed_writable::typed_writable;

  /// log_file_sink::reopen(): the file is closed and opened again by its
  /// path, for logrotate's move-then-SIGHUP.
  std::error_code reopen() noexcept { return get_sink().reopen(); }
  /// log_file_sink::rotations(), reopens(), fsyncs(), bytes_written().
  std::size_t rotations() const noexcept { return get_sink().rotations(); }
  std::size_t reopens() const noexcept { return get_sink().reopens(); }
  std::size_t fsyncs() const noexcept { return get_sink().fsyncs(); }
  std::uint64_t bytes_written() const noexcept { return get_sink().bytes_written(); }
};

/// A writable over a new log_file_sink, which destroys the stream with an
/// error it meets outside a write or end (see
/// log_file_sink::report_errors_to_stream()), with file_high_water_mark
/// (64 KiB, write_stream.h) unless the options set a mark. Throws
/// stream_error when the file cannot be opened. It converts to
/// std::unique_ptr<writable>.
///
///     auto log = sluice::make_log_writable("app.log", {.max_size = 10 << 20, .keep = 3});
std::unique_ptr<log_writable> make_log_writable(const std::string& path, const log_options& options,
                                                const writable_options& stream_options);
std::unique_ptr<log_writable> make_log_writable(const std::string& path, const log_options& options = {});
/// The non-throwing twins (as everywhere in sluice: the same name, `ec`
/// last, noexcept): null and `ec` set on failure, `ec` cleared on success.
std::unique_ptr<log_writable> make_log_writable(const std::string& path, const log_options& options,
                                                const writable_options& stream_options,
                                                std::error_code& ec) noexcept;
std::unique_ptr<log_writable> make_log_writable(const std::string& path, const log_options& options,
                                                std::error_code& ec) noexcept;

}  // namespace sluice
