#include "sluice/fs/log_writable.h"

#include <new>
#include <utility>

#include "sluice/sinks/log_file_sink.h"

namespace sluice {

// ---- typed handles

log_writable::log_writable(std::unique_ptr<log_file_sink> s, const writable_options& options)
    : writable(std::move(s), options), log_(static_cast<log_file_sink*>(&writable::get_sink())) {}

std::error_code log_writable::reopen() noexcept { return log_->reopen(); }
std::size_t log_writable::rotations() const noexcept { return log_->rotations(); }
std::size_t log_writable::reopens() const noexcept { return log_->reopens(); }
std::size_t log_writable::fsyncs() const noexcept { return log_->fsyncs(); }
std::uint64_t log_writable::bytes_written() const noexcept { return log_->bytes_written(); }

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

}  // namespace sluice
