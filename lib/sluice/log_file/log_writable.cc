#include "sluice/log_file/log_writable.h"

#include <new>
#include <utility>

#include "sluice/fs/write_stream.h"

namespace sluice {

std::unique_ptr<log_writable> make_log_writable(const std::string& path, const log_options& options,
                                                const writable_options& stream_options) {
  auto sink = std::make_unique<log_file_sink>(path, options);
  sink->report_errors_to_stream();
  return std::make_unique<log_writable>(std::move(sink), file_writable_options(stream_options));
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
    return std::make_unique<log_writable>(std::move(sink), file_writable_options(stream_options));
  } catch (const std::bad_alloc&) {
    ec = std::make_error_code(std::errc::not_enough_memory);
  } catch (const std::system_error& e) {  // invalid stream options
    ec = e.code();
  }
  return nullptr;
}

std::unique_ptr<log_writable> make_log_writable(const std::string& path, const log_options& options,
                                                std::error_code& ec) noexcept {
  return make_log_writable(path, options, writable_options{}, ec);
}

}  // namespace sluice
