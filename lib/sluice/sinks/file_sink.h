// file_sink: an fd_sink that opens a path and closes it at end.
#pragma once

#include <memory>
#include <string>
#include <system_error>

#include "sluice/sinks/fd_sink.h"
#include "sluice/sinks/file_options.h"

namespace sluice {

/// A sink that opens `path` (O_CREAT | O_WRONLY | O_CLOEXEC, plus the mode's
/// flag) and closes it when the stream ends (after an optional fsync), or when
/// it is destroyed. Errors of fsync and close reach end()'s callback and 'error'.
///
///     auto log = sluice::make_file_writable("app.log", {.mode = sluice::file_options::open_mode::append});
class file_sink : public fd_sink {
 public:
  /// Opens `path`. Throws stream_error (with the errno of open()) when the
  /// file cannot be opened.
  static std::unique_ptr<file_sink> open(const std::string& path, const file_options& options = {});
  /// The non-throwing twins (`ec` last): null and `ec` set on failure.
  static std::unique_ptr<file_sink> open(const std::string& path, const file_options& options,
                                         std::error_code& ec) noexcept;
  static std::unique_ptr<file_sink> open(const std::string& path, std::error_code& ec) noexcept;

  void final(final_done done) override;

 private:
  file_sink(int fd, const file_options& options) noexcept;
  bool fsync_at_end_;
};

}  // namespace sluice
