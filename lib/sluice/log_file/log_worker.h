// log_worker: a log file written by a file_worker's thread for any number of
// producers: rotation, fsync policy, reopen at SIGHUP and the wait for disk
// space, as log_file_sink writes a log on a loop.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <system_error>

#include "sluice/log_file/log_options.h"
#include "sluice/sinks/file_worker.h"

namespace sluice {

class loop;

namespace detail {
class log_target;
class sync_group;
struct sync_watch_state;
}  // namespace detail

/// A file_worker that writes a log (make_worker_writable() works on it as
/// on any file_worker): rotation by size between the chunks of a batch (a
/// chunk is never split across two files), fsync by policy (every_ms with a
/// timed sleep, so a sync comes at most the interval after a write even when
/// idle; at_end and the others before each file is closed, at rotation,
/// reopen and close()), and request_reopen() from any thread, carried out by
/// the worker before its next batch (or at once when idle). An error of
/// rename, open or fsync is the error of the batch in flight (so of its
/// producer's stream); one met while idle, of the next batch, else of
/// close().
///
///     sluice::log_worker log("app.log", {.max_size = 10 << 20, .keep = 3});
///     auto out = sluice::make_worker_writable(log);   // on each producer thread
///     out->write("one line\n");
///     log.request_reopen();                            // from SIGHUP's handler, say
class log_worker : public file_worker {
 public:
  /// Opens the log at `path`; throws stream_error when it cannot.
  log_worker(const std::string& path, const log_options& options);
  /// The same, made on the heap; and its non-throwing twin (the same name,
  /// `ec` last, noexcept): null and `ec` set on failure.
  static std::unique_ptr<log_worker> open(const std::string& path, const log_options& options);
  static std::unique_ptr<log_worker> open(const std::string& path, const log_options& options,
                                          std::error_code& ec) noexcept;

  /// Closes and reopens the path (after an external rename) before the next
  /// batch, waking the worker if it sleeps. Any thread, any time, also from
  /// a signal handler (one atomic RMW and maybe a futex wake).
  void request_reopen() noexcept;

  /// Counters, for tools and tests: rotations, reopens, fsyncs.
  std::size_t rotations() const noexcept;
  std::size_t reopens() const noexcept;
  std::size_t fsyncs() const noexcept;
  /// With log_options::wait_for_space: whether a batch waits for the disk
  /// to have room now, and how many times one began to wait (see
  /// file_worker::chunks_written() for what of it landed).
  bool waiting_for_space() const noexcept;
  std::size_t space_waits() const noexcept;
  /// With log_options::compress: rotated files compressed, and compressions
  /// that failed (each try; see log_options::compress). Final once close()
  /// has returned: it waits for the compressor.
  std::size_t compressed() const noexcept;
  std::size_t compress_failures() const noexcept;

  /// With log_options::sync_behind: the bytes of the log, counted as
  /// bytes_written() counts them (every producer's, over every file),
  /// known to be on disk: each was written before a sync that has
  /// returned began. Compare a round's worker_sink::position() with it.
  /// 0 without the option.
  std::uint64_t synced() const noexcept;

  /// One loop's watch on synced(): `fn(synced, error)` runs on that loop
  /// (a posted task) after syncs that moved it, and with the error of a
  /// sync that failed, after which synced() never moves again. Destroyed
  /// on the loop's thread, before the loop and the worker go; a task
  /// already posted then does nothing.
  class sync_watch {
   public:
    ~sync_watch();
    sync_watch(const sync_watch&) = delete;
    sync_watch& operator=(const sync_watch&) = delete;

   private:
    friend class log_worker;
    sync_watch(detail::sync_group& group, std::shared_ptr<detail::sync_watch_state> state);
    detail::sync_group& group_;
    std::shared_ptr<detail::sync_watch_state> state_;
  };
  /// Null without log_options::sync_behind.
  std::unique_ptr<sync_watch> watch_syncs(loop& l, std::function<void(std::uint64_t, std::error_code)> fn);

 private:
  explicit log_worker(detail::log_target* log);
  const detail::log_target* log_;  // owned by the worker's thread state
};

}  // namespace sluice
