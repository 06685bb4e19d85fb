// file_worker: one thread that writes one file (or a log) for any number
// of producers, each writing through a worker_sink on its own loop.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <system_error>
#include <thread>

#include "sluice/sinks/file_options.h"
#include "sluice/log_file/log_options.h"
#include "sluice/sinks/worker_sink.h"

namespace sluice {

namespace detail {
struct worker_thread;
}  // namespace detail

/// One thread that writes one file (or any fd) for any number of producers.
/// (make_worker_writable() and flush_sync() are in sluice/fs/write_stream.h, sluice/fs/flush_sync.h.)
///
/// - A producer makes a sink with make_sink() and builds its writable on it,
///   on the producer's own thread and loop. Its writes are coalesced per turn
///   and handed to the worker as one batch; the worker writes the batch
///   straight from the stream's buffers (no copy) with fd_sink's code path
///   (writev up to IOV_MAX buffers, partial writes resumed, EINTR retried),
///   then posts the completion back to the producer's loop, where the write
///   callbacks, 'drain' and 'finish' run, in order.
/// - A batch is written whole before any other: if the kernel takes part of
///   it, the rest follows before the next producer's batch. A line written
///   with one write() is never torn or interleaved with another.
/// - Each producer has at most one batch at the worker (the writable never
///   starts a second sink call before the first is done), so one producer's
///   lines keep their order.
/// - flush_sync(stream) blocks the producer until everything it wrote has
///   been written, with no allocation and, when the worker is quick, no
///   syscall: threads sleep and wake on one atomic word per worker.
///
///     sluice::file_worker log("app.log", {.mode = sluice::file_options::open_mode::append});
///     // on each producer thread:
///     auto out = sluice::make_worker_writable(log);
///     out->write("one line\n");
///     sluice::flush_sync(*out);          // or run the loop: callbacks come back there
///     sluice::loop::current().run();
///
/// The destructor writes everything already handed over, then joins the
/// thread and closes the fd (if owned). Sinks may outlive it: their later
/// writes fail with EBADF.
///
/// **A log file.** Made with log_options, the worker writes a log as
/// log_file_sink does (the same detail::log_rotation): rotation by size between
/// the chunks of a batch (a chunk is never split across two files), fsync by
/// policy (every_ms with a timed sleep, so a sync comes at most the interval
/// after a write even when idle; at_end and the others before each file is
/// closed, at rotation, reopen and close()), and request_reopen() from any
/// thread, carried out by the worker before its next batch (or at once when
/// idle). An error of rename, open or fsync is the error of the batch in
/// flight (so of its producer's stream); one met while idle, of the next
/// batch, else of close().
///
///     sluice::file_worker log("app.log", sluice::log_options{.max_size = 10 << 20, .keep = 3});
///     auto out = sluice::make_worker_writable(log);   // on each producer thread
///     out->write("one line\n");
///     log.request_reopen();                            // from SIGHUP's handler, say
class file_worker {
 public:
  /// A worker over `fd`; `close_fd`: close it when the worker is closed.
  explicit file_worker(int fd, bool close_fd = false);
  /// Opens `path` as file_sink does; throws stream_error when it cannot.
  /// `fsync_at_end` syncs the file when the worker is closed.
  explicit file_worker(const std::string& path, const file_options& options = {});
  /// A log file at `path` (see above); throws stream_error when it cannot be
  /// opened.
  file_worker(const std::string& path, const log_options& options);
  /// The non-throwing twin: null and `ec` set on failure.
  static std::unique_ptr<file_worker> open_log(const std::string& path, const log_options& options,
                                               std::error_code& ec) noexcept;
  ~file_worker();
  file_worker(const file_worker&) = delete;
  file_worker& operator=(const file_worker&) = delete;

  /// A sink for one producer's writable; any thread may ask for one.
  std::unique_ptr<worker_sink> make_sink();

  /// Writes what was handed over, stops the thread, then syncs (if asked)
  /// and closes the fd (if owned). Returns the error of fsync or close.
  /// Called by the destructor; later calls return the same result.
  std::error_code close() noexcept;

  /// A log worker: closes and reopens the path (after an external rename)
  /// before the next batch, waking the worker if it sleeps. Any thread, any
  /// time, also from a signal handler (one atomic RMW and maybe a futex
  /// wake). A plain fd worker ignores it.
  void request_reopen() noexcept;

  /// The fd; -1 for a log worker, whose fd changes as it rotates.
  int fd() const noexcept { return fd_; }
  /// Counters, for tools and tests: batches written, syscalls made, bytes;
  /// and for a log worker: rotations, reopens, fsyncs.
  std::size_t batches() const noexcept;
  std::size_t syscalls() const noexcept;
  std::size_t bytes_written() const noexcept;
  std::size_t rotations() const noexcept;
  std::size_t reopens() const noexcept;
  std::size_t fsyncs() const noexcept;
  /// A log worker with log_options::wait_for_space: whether a batch waits
  /// for the disk to have room now, and how many times one began to wait.
  bool waiting_for_space() const noexcept;
  std::size_t space_waits() const noexcept;
  /// Chunks (each producer's write() is one) written whole: each batch's
  /// once it is done, and, while a batch waits for space, those of it that
  /// landed before the disk was full. So a program that gives up the wait
  /// knows how many of its writes are in the file though their callbacks
  /// will never come.
  std::size_t chunks_written() const noexcept;
  /// A log worker with log_options::compress: rotated files compressed, and
  /// compressions that failed (each try; see log_options::compress). Final
  /// once close() has returned: it waits for the compressor.
  std::size_t compressed() const noexcept;
  std::size_t compress_failures() const noexcept;

 private:
  void start();
  std::shared_ptr<detail::worker_thread> core_;
  std::thread thread_;
  int fd_;
  bool close_fd_;
  bool fsync_at_close_ = false;
  bool closed_ = false;
  std::error_code close_error_;
};

}  // namespace sluice
