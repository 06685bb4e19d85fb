// worker_thread: a file_worker's thread, and the worker_target through which
// a component above the sinks (log_file/'s rotating log) gives it a file of
// its own to write into instead of a plain fd.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <system_error>
#include <thread>

#include "sluice/sinks/detail/fd_writer.h"
#include "sluice/sinks/detail/worker_protocol.h"

namespace sluice::detail {

struct worker_thread;

/// What a worker thread writes into when it is not a plain fd. The sinks
/// know only this face: the log file (log_file/log_worker.cc) is one, and
/// stays in its own component. Everything runs on the worker thread but
/// close(), which runs after the thread is joined.
class worker_target {
 public:
  virtual ~worker_target() = default;
  /// Writes one round; its error (and then s.landed: the chunks written whole).
  virtual std::error_code write(worker_thread& t, worker_slot& s) noexcept = 0;
  /// No round waits: what is due while idle (a reopen asked for, a sync).
  virtual void idle(worker_thread& t) noexcept = 0;
  /// Sleeps as sleep_on(t.word, w) does; false to get up before a push (a
  /// sync that is due).
  virtual bool sleep(worker_thread& t, std::uint32_t w) noexcept = 0;
  /// After the join: what is left to sync, and the close. Its error.
  virtual std::error_code close(worker_thread& t) noexcept = 0;
};

/// The worker thread's side of a file_worker: what it writes into, the
/// counters it publishes for other threads, and the thread itself.
struct worker_thread : worker_core {
  explicit worker_thread(int fd) : out(fd) {}

  alignas(64) fd_writer out;  // the worker thread's; unused with a target
  std::unique_ptr<worker_target> target;  // null: `out` writes the fd
  // Written by the worker thread only (plain stores), read anywhere.
  std::atomic<std::size_t> batches{0}, syscalls{0}, bytes{0};
  // Chunks written whole: each batch's once it is done (a target may
  // store more while a batch waits, see file_worker::chunks_written()).
  std::atomic<std::size_t> chunks{0};
  std::thread thread;

  void run() noexcept;
  void write(worker_slot& s) noexcept;
};

}  // namespace sluice::detail
