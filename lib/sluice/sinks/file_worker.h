// file_worker: one thread that writes one file for any number of
// producers, each writing through a worker_sink on its own loop.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <system_error>

#include "sluice/sinks/file_options.h"
#include "sluice/sinks/worker_sink.h"

namespace sluice {

namespace detail {
struct worker_thread;
class worker_target;
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
/// A log file that rotates, syncs by policy and reopens at SIGHUP is a
/// log_worker (sluice/log_file/log_worker.h): a file_worker whose thread
/// writes the log as log_file_sink does.
class file_worker {
 public:
  /// A worker over `fd`; `close_fd`: close it when the worker is closed.
  explicit file_worker(int fd, bool close_fd = false);
  /// Opens `path` as file_sink does; throws stream_error when it cannot.
  /// `fsync_at_end` syncs the file when the worker is closed.
  explicit file_worker(const std::string& path, const file_options& options = {});
  virtual ~file_worker();
  file_worker(const file_worker&) = delete;
  file_worker& operator=(const file_worker&) = delete;

  /// A sink for one producer's writable; any thread may ask for one.
  std::unique_ptr<worker_sink> make_sink();

  /// Writes what was handed over, stops the thread, then syncs (if asked)
  /// and closes the fd (if owned). Returns the error of fsync or close.
  /// Called by the destructor; later calls return the same result.
  std::error_code close() noexcept;

  /// The fd; -1 for a worker over a target (a log_worker's fd changes as it rotates).
  int fd() const noexcept { return fd_; }
  /// Counters, for tools and tests: batches written, syscalls made, bytes.
  std::size_t batches() const noexcept;
  std::size_t syscalls() const noexcept;
  std::size_t bytes_written() const noexcept;
  /// Chunks (each producer's write() is one) written whole: each batch's
  /// once it is done, and, while a log_worker's batch waits for space,
  /// those of it that landed before the disk was full. So a program that
  /// gives up the wait knows how many of its writes are in the file though
  /// their callbacks will never come.
  std::size_t chunks_written() const noexcept;

 protected:
  /// A worker whose thread writes into `target` (a component's own file,
  /// as log_worker's log) instead of an fd; fd() is then -1.
  explicit file_worker(std::unique_ptr<detail::worker_target> target);
  /// The state the thread shares, for what a target's owner adds.
  detail::worker_thread& core() const noexcept;

 private:
  void start();
  std::shared_ptr<detail::worker_thread> core_;
  int fd_;
  bool close_fd_;
  bool fsync_at_close_ = false;
  bool closed_ = false;
  std::error_code close_error_;
};

}  // namespace sluice
