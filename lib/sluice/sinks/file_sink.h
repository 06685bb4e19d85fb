// file_sink: an fd_sink that opens a path and closes it at end.
#pragma once

#include <sys/types.h>

#include <memory>
#include <string>
#include <system_error>

#include "sluice/sinks/fd_sink.h"

namespace sluice {

struct writable_options;
class writable;

struct file_options {
  enum class open_mode {
    append,    // O_APPEND: every write lands at the end (log files)
    truncate,  // O_TRUNC: start empty
    exclusive, // O_EXCL: fail if the file exists
  };
  open_mode mode = open_mode::truncate;
  mode_t permissions = 0644;  // for a file that is created
  bool fsync_at_end = false;  // fsync() before close at end()
};

/// A sink that opens `path` (O_CREAT | O_WRONLY | O_CLOEXEC, plus the mode's
/// flag) and closes it when the stream ends (after an optional fsync), or when
/// it is destroyed. Errors of fsync and close reach end()'s callback and 'error'.
///
///     auto log = sluice::make_file_writable("app.log", {.mode = sluice::file_options::open_mode::append});
class file_sink : public fd_sink {
 public:
  /// Throws stream_error (with the errno) when the file cannot be opened.
  explicit file_sink(const std::string& path, const file_options& options = {});
  /// The non-throwing twin: null and `ec` set on failure.
  static std::unique_ptr<file_sink> open(const std::string& path, const file_options& options,
                                         std::error_code& ec) noexcept;

  void final(final_done done) override;
  bool has_final() const noexcept override { return true; }

 private:
  file_sink(int fd, const file_options& options) noexcept;
  static int open_fd(const std::string& path, const file_options& options) noexcept;
  bool fsync_at_end_;
};

/// A writable over a new file_sink. Throws stream_error when opening fails.
std::unique_ptr<writable> make_file_writable(const std::string& path, const file_options& options,
                                             const writable_options& stream_options);
std::unique_ptr<writable> make_file_writable(const std::string& path, const file_options& options = {});

}  // namespace sluice
