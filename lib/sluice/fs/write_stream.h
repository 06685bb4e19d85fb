// write_stream: Node's fs.createWriteStream(), a writable put on an fd, a
// file or a file_worker in one call, as a typed handle (the stream knows
// its sink's type: see stream/typed_stream.h).
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <system_error>

#include "sluice/sinks/fd_sink.h"
#include "sluice/sinks/file_options.h"
#include "sluice/sinks/file_sink.h"
#include "sluice/sinks/worker_sink.h"
#include "sluice/stream/typed_stream.h"
#include "sluice/stream/writable.h"

namespace sluice {

class file_worker;

/// A writable over an fd_sink; get_sink() gives the fd_sink.
using fd_writable = typed_writable<fd_sink>;
/// A writable over a file_sink (an fd_sink that opened its file).
using file_writable = typed_writable<file_sink>;
/// A writable over a file_worker's sink; what flush_sync() drives.
using worker_writable = typed_writable<worker_sink>;

/// The default high-water mark of a byte stream over a regular file
/// (make_file_writable(), make_fd_writable() on one, make_log_writable()):
/// Node v22's default for every byte stream, fs.createWriteStream()'s
/// included, where sluice's other streams keep Node v20's 16 KiB. A producer
/// that waits for 'drain' hands the kernel one write of this size: each
/// write(2) into a file costs ~3 us besides its bytes here (64 KiB at a time
/// takes 0.6x the system time of 16 KiB at a time).
inline constexpr std::size_t file_high_water_mark = 64 * 1024;

/// `options` with file_high_water_mark as the high-water mark, unless they set
/// one or object mode.
writable_options file_writable_options(const writable_options& options);

/// A writable over any file descriptor (file, pipe, socket, /dev/null,
/// stdout); see fd_sink. `close_fd` closes it when the stream is destroyed.
/// Over a regular file the default mark is file_high_water_mark (one
/// fstat() here tells). The handle converts to std::unique_ptr<writable>.
///
///     auto out = sluice::make_fd_writable(STDOUT_FILENO);
std::unique_ptr<fd_writable> make_fd_writable(int fd, bool close_fd = false, const writable_options& options = {});

/// A writable over a new file_sink, file_high_water_mark unless the options
/// set a mark. Throws stream_error (with the errno of
/// open()) when opening fails.
///
///     auto log = sluice::make_file_writable("app.log", {.mode = sluice::file_options::open_mode::append});
std::unique_ptr<file_writable> make_file_writable(const std::string& path, const file_options& options,
                                                  const writable_options& stream_options);
std::unique_ptr<file_writable> make_file_writable(const std::string& path, const file_options& options = {});
/// The non-throwing twins: null, and `ec` set (the errno of open(), or the
/// stream options' error), on failure.
std::unique_ptr<file_writable> make_file_writable(const std::string& path, const file_options& options,
                                                  const writable_options& stream_options,
                                                  std::error_code& ec) noexcept;
std::unique_ptr<file_writable> make_file_writable(const std::string& path, const file_options& options,
                                                  std::error_code& ec) noexcept;
std::unique_ptr<file_writable> make_file_writable(const std::string& path, std::error_code& ec) noexcept;

/// The default high-water mark of make_worker_writable()'s byte streams.
inline constexpr std::size_t worker_high_water_mark = 1024 * 1024;

/// A writable over a new sink of `worker` (see file_worker), on this
/// thread's loop (or the options' loop). Unless the options set a high-water
/// mark (or object mode), it is worker_high_water_mark, not Node's 16 KiB:
/// every 'drain' is a round trip to the worker thread. The handle is what
/// flush_sync() takes.
std::unique_ptr<worker_writable> make_worker_writable(file_worker& worker);
std::unique_ptr<worker_writable> make_worker_writable(file_worker& worker, const writable_options& options);

}  // namespace sluice
