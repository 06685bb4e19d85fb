// worker_sink: one producer's sink onto a file_worker (sinks/file_worker.h):
// its writes go to the worker thread as one batch a turn, and their
// completions come back to the producer's loop.
#pragma once

#include <cstdint>
#include <memory>
#include <string_view>
#include <system_error>

#include "sluice/sinks/sink.h"

namespace sluice {

namespace detail {
struct worker_core;
struct worker_slot;
}  // namespace detail

/// One producer's sink onto a file_worker (see there). Coalesces a turn's
/// writes, so that they leave as one batch.
class worker_sink : public sink, public sync_sink {
 public:
  ~worker_sink() override;
  worker_sink(const worker_sink&) = delete;
  worker_sink& operator=(const worker_sink&) = delete;

  void attach(loop& l) override;
  void write(std::string_view chunk, write_done done) override;
  void writev(const write_batch& batch, write_done done) override;
  /// The exit path (sync_sink): shutdown writes (see stream/detail/shutdown.h) go through the worker, like
  /// any batch, and are waited for: they fail with EBADF once the worker
  /// is closed.
  std::error_code drain_sync() noexcept override;
  std::error_code write_sync(const write_batch& batch) noexcept override;
  std::size_t landed_sync() const noexcept override;

  /// The worker's byte count (file_worker::bytes_written(), every
  /// producer's) once it had written the last round completed here: read
  /// in a write callback, every byte of that callback's round lies below
  /// it. What a log_worker's synced() is compared with (log_options::
  /// sync_behind).
  std::uint64_t position() const noexcept;

  // ---- for flush_sync() (sluice/fs/write_stream.h, sluice/fs/flush_sync.h), on the producer's thread:
  // the sink's part of it; flush_sync does the stream's.

  /// True inside a write_done of this sink (a callback of its stream, or a
  /// 'drain' listener): a round may then only be waited for, since
  /// completing it here would run callbacks inside callbacks.
  bool completing() const noexcept;
  /// Blocks until the worker has written the round in flight, if any, and
  /// returns its error; the completion still comes from the loop.
  std::error_code wait_written() noexcept;
  /// From now until end_flush(), every round starts claimed: it is never
  /// posted to the loop, and needs no hold on it.
  void begin_flush() noexcept;
  /// Completes the rounds in flight here and now, each once the worker is
  /// done with it (write_done runs inside, and may start the next round),
  /// until none is left; then rounds are posted again.
  void end_flush() noexcept;

 private:
  friend class file_worker;
  explicit worker_sink(std::shared_ptr<detail::worker_core> core);
  void hand_over(write_done done);
  void complete_here() noexcept;

  std::shared_ptr<detail::worker_core> core_;
  detail::worker_slot* slot_;  // outlives the sink while a completion is posted
};

}  // namespace sluice
