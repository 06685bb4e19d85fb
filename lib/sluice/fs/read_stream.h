// read_stream: Node's fs.createReadStream(), a readable over an fd or a
// file in one call, as a typed handle (the stream knows its source's type:
// see stream/typed_stream.h).
#pragma once

#include <memory>
#include <string>
#include <system_error>

#include "sluice/sources/fd_source.h"
#include "sluice/stream/readable.h"
#include "sluice/stream/typed_stream.h"

namespace sluice {

/// A readable over an fd_source (what make_fd_readable() and
/// make_file_readable() return), with the source's controls.
///
///     auto in = sluice::make_fd_readable(STDIN_FILENO);
///     auto term = sluice::on_signal(sluice::loop::current(), SIGTERM, [&in] { in->stop(); });
class fd_readable : public typed_readable<fd_source> {
 public:
  using typed_readable<fd_source>::typed_readable;

  /// fd_source::stop(): nothing more is read, and what the stream holds
  /// still comes out, then 'end' (a tool's SIGTERM; destroy() drops it).
  void stop() noexcept { get_source().stop(); }
  /// The file descriptor read.
  int fd() const noexcept { return get_source().fd(); }
};

/// A readable over an fd_source. Unless `options` sets one, the high-water
/// mark is 64 KiB, the chunk size (Node's fs.createReadStream does the same).
/// The handle is an fd_readable (stop()); it converts to
/// std::unique_ptr<readable>.
///
///     auto in = sluice::make_fd_readable(STDIN_FILENO);
std::unique_ptr<fd_readable> make_fd_readable(int fd, bool close_fd = false, const readable_options& options = {});

/// Opens `path` for reading (O_RDONLY | O_CLOEXEC) and returns a readable
/// over it that closes the fd when destroyed (after 'end', by default).
/// Throws stream_error with the errno of open() when the file cannot be
/// opened.
///
///     auto in = sluice::make_file_readable("access.log");
std::unique_ptr<fd_readable> make_file_readable(const std::string& path, const readable_options& options = {});
/// The non-throwing twins (`ec` last): null, and `ec` set (the errno of
/// open(), or the options' error), on failure.
std::unique_ptr<fd_readable> make_file_readable(const std::string& path, const readable_options& options,
                                                std::error_code& ec) noexcept;
std::unique_ptr<fd_readable> make_file_readable(const std::string& path, std::error_code& ec) noexcept;

}  // namespace sluice
