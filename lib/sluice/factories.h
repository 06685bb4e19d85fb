// factories: a stream put on one of the library's sinks or sources, in one
// call; and flush_sync(), which drives a worker writable from its stream.
// The top layer: it knows the streams (stream/) and the sinks and sources
// (sinks/, sources/), which know nothing of each other.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <system_error>

#include "sluice/sinks/file_options.h"
#include "sluice/stream/readable.h"
#include "sluice/stream/writable.h"

namespace sluice {

class fd_source;
class file_worker;

// ---- typed handles: a stream with the controls of its sink or source, so
// that a user never casts get_sink() or get_source() to reach them.

/// A readable over an fd_source (what make_fd_readable() and
/// make_file_readable() return), with the source's controls.
///
///     auto in = sluice::make_fd_readable(STDIN_FILENO);
///     auto term = sluice::on_signal(sluice::loop::current(), SIGTERM, [&in] { in->stop(); });
class fd_readable : public readable {
 public:
  explicit fd_readable(std::unique_ptr<fd_source> s, const readable_options& options = {});

  /// The source, by its type (hides readable::get_source(), which gives `source&`).
  fd_source& get_source() const noexcept { return *fd_; }
  /// fd_source::stop(): nothing more is read, and what the stream holds
  /// still comes out, then 'end' (a tool's SIGTERM; destroy() drops it).
  void stop() noexcept;
  /// The file descriptor read.
  int fd() const noexcept;

 private:
  fd_source* fd_;  // owned by the stream, as its source
};

// ---- writables

/// A writable over any file descriptor (file, pipe, socket, /dev/null,
/// stdout); see fd_sink. `close_fd` closes it when the stream is destroyed.
///
///     auto out = sluice::make_fd_writable(STDOUT_FILENO);
std::unique_ptr<writable> make_fd_writable(int fd, bool close_fd = false,
                                           const writable_options& options = {});

/// A writable over a new file_sink. Throws stream_error when opening fails.
///
///     auto log = sluice::make_file_writable("app.log", {.mode = sluice::file_options::open_mode::append});
std::unique_ptr<writable> make_file_writable(const std::string& path, const file_options& options,
                                             const writable_options& stream_options);
std::unique_ptr<writable> make_file_writable(const std::string& path, const file_options& options = {});

/// The default high-water mark of make_worker_writable()'s byte streams.
inline constexpr std::size_t worker_high_water_mark = 1024 * 1024;

/// A writable over a new sink of `worker` (see file_worker), on this
/// thread's loop (or the options' loop). Unless the options set a high-water
/// mark (or object mode), it is worker_high_water_mark, not Node's 16 KiB:
/// every 'drain' is a round trip to the worker thread.
std::unique_ptr<writable> make_worker_writable(file_worker& worker);
std::unique_ptr<writable> make_worker_writable(file_worker& worker, const writable_options& options);

/// Blocks the calling thread, which must be the stream's, until everything
/// written to `stream` before the call is in the file: writes held for
/// coalescing are handed over at once, and each batch's completion (its
/// callbacks, 'drain') runs here as soon as the worker is done with it,
/// rather than later on the loop. Writes that those callbacks make are
/// flushed too; corked writes stay corked.
///
/// Returns the stream's first error (ENOSPC, EPIPE, ...), or
/// ERR_STREAM_DESTROYED if it was destroyed with writes that never went out,
/// or ERR_METHOD_NOT_IMPLEMENTED if its sink is not a worker_sink. With
/// nothing pending it returns at once. No allocation.
///
/// Called from a write callback (or 'drain' listener) of the same stream, it
/// hands over what is held and waits for the bytes only: the completions
/// then come from the loop, after the callbacks still due in the current one.
std::error_code flush_sync(writable& stream);

// ---- readables

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
/// The non-throwing twin: null, and `ec` set to the errno of open(), on failure.
std::unique_ptr<fd_readable> make_file_readable(const std::string& path, std::error_code& ec,
                                                const readable_options& options = {}) noexcept;

}  // namespace sluice
