// log_file_sink: an append-only file for logs, rotated by size, reopened on
// request (logrotate's SIGHUP), synced by policy.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>

#include "sluice/loop/loop.h"
#include "sluice/log_file/log_options.h"
#include "sluice/sinks/sink.h"

namespace sluice {

namespace detail {
class log_rotation;
class log_writer;
}  // namespace detail

/// A sink that appends to a log file (O_WRONLY | O_CREAT | O_APPEND |
/// O_CLOEXEC), writing a turn's lines with writev as fd_sink does (the same
/// fd_writer: IOV_MAX, partial writes, EINTR, EAGAIN through the loop).
///
/// - **Rotation by size.** When the next chunk would take the file past
///   max_size and the file is not empty, the file is rotated first:
///   app.log.<keep-1> -> app.log.<keep> (replacing it), ..., app.log ->
///   app.log.1, then app.log is created afresh. A chunk (one write(),
///   normally one line) is never split across two files: a batch is written
///   in parts, rotating between chunks. A chunk larger than max_size goes
///   whole into a fresh file, which then exceeds max_size. The size counts
///   the file's size when opened plus this sink's own writes (another
///   process appending to the same file is not seen). Only the files below
///   the first missing number move up (into the gap), so a rotation costs one
///   rename per kept file at most; numbers above <keep> left by an earlier,
///   larger keep are not touched.
/// - **reopen()** closes and reopens the path (creating it), for external
///   rotation: logrotate renames the file, then signals the process (see
///   on_signal() in sluice/loop/signals.h). A reopen asked for while a write is in
///   flight waits until the chunk being written is complete.
/// - **fsync policy**: see log_options::fsync_policy. Unless the policy is
///   never, each file is synced before it is closed if it has unsynced
///   bytes (at rotation, reopen and end, not at destroy()).
/// - Errors of rename, open, fsync and close become the stream's error (a
///   system_category code with the errno): through the write or end in
///   flight, else by destroying the stream with it (when
///   report_errors_to_stream() is on, as make_log_writable() sets it), else
///   through the next write or end.
///
///     auto log = sluice::make_log_writable("app.log", {.max_size = 10 << 20, .keep = 3});
///     log->write("started\n");
class log_file_sink : public sink, public sync_sink {
 public:
  /// Throws stream_error (with the errno) when the file cannot be opened.
  explicit log_file_sink(const std::string& path, const log_options& options = {});
  /// The non-throwing twin: null and `ec` set on failure.
  static std::unique_ptr<log_file_sink> open(const std::string& path, const log_options& options,
                                             std::error_code& ec) noexcept;
  ~log_file_sink() override;
  log_file_sink(const log_file_sink&) = delete;
  log_file_sink& operator=(const log_file_sink&) = delete;

  void attach(loop& l) override { loop_ = &l; }
  void write(std::string_view chunk, write_done done) override;
  void writev(const write_batch& batch, write_done done) override;
  void final(final_done done) override;
  void destroy(std::error_code err, destroy_done done) noexcept override;
  /// Shutdown writes (see stream/detail/shutdown.h) rotate as any write does, and
  /// are synced unless the fsync policy is never.
  std::error_code drain_sync() noexcept override;
  std::error_code write_sync(const write_batch& batch) noexcept override;
  std::size_t landed_sync() const noexcept override { return landed_sync_; }

  /// Closes the file and opens the path again, creating it. Between writes
  /// it happens now, and its error (also reported as the stream's) is
  /// returned; during a write it happens once the chunk being written is
  /// complete, and {} is returned. After end or destroy it does nothing.
  std::error_code reopen() noexcept;

  /// When on, an error met outside a write or end (a sync timer, reopen())
  /// destroys the stream with it (see sink::report_error()); when off (the
  /// default), the next write or end reports it. make_log_writable() turns
  /// it on.
  void report_errors_to_stream(bool on = true) noexcept { report_to_stream_ = on; }

  const std::string& path() const noexcept;
  int fd() const noexcept;
  /// The current file's size as this sink counts it.
  std::uint64_t size() const noexcept;
  /// Counters, for tools and tests.
  std::size_t rotations() const noexcept;
  std::size_t reopens() const noexcept;
  std::size_t fsyncs() const noexcept;
  std::size_t syscalls() const noexcept { return syscalls_; }
  std::uint64_t bytes_written() const noexcept;

 private:
  explicit log_file_sink(std::unique_ptr<detail::log_rotation> file);

  std::error_code before_part() noexcept;
  std::error_code start_part() noexcept;
  void pump() noexcept;
  std::error_code pump_sync() noexcept;
  void finish(std::error_code ec) noexcept;
  void after_call(std::error_code& ec) noexcept;
  void account() noexcept;
  std::error_code reopen_now() noexcept;
  void forget_fd() noexcept;
  std::error_code sync() noexcept;
  void on_timer() noexcept;
  void report(std::error_code ec) noexcept;

  // The file (rotation, reopen, fsync) and its writer, behind a pointer so
  // that this header does not bring the compressor's thread to its users.
  std::unique_ptr<detail::log_writer> log_;
  loop* loop_ = nullptr;

  std::optional<write_done> done_;  // the call in flight

  std::size_t syscalls_seen_ = 0;  // log_.out().syscalls() already counted
  timer_id timer_ = 0;    // every_ms: the sync that is due
  bool reopen_asked_ = false;
  bool closed_ = false;   // by end or destroy: no more reopen, rotation or sync
  bool report_to_stream_ = false;  // see report_errors_to_stream()
  std::error_code pending_;  // met between calls, for the next call to report
  std::size_t landed_sync_ = 0;  // see landed_sync()

  std::size_t syscalls_ = 0;
};

}  // namespace sluice
