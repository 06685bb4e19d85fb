// log_worker: the log file as a file_worker's thread writes it, through the
// worker_target face that the sinks know (sinks/detail/worker_thread.h).
#include "sluice/log_file/log_worker.h"

#include <cerrno>
#include <chrono>
#include <new>
#include <utility>

#include "sluice/log_file/detail/log_writer.h"
#include "sluice/sinks/detail/worker_thread.h"

namespace sluice {
namespace detail {

// The log, on the worker thread: one batch as log_file_sink writes it, in
// parts that each fit the current file, rotating between them; but
// blocking, as a regular file's writes do anyway. The counters are
// published for other threads.
class log_target final : public worker_target {
 public:
  log_target(const std::string& path, const log_options& options)
      : log_(std::make_unique<log_rotation>(path, options)) {}

  std::error_code write(worker_thread& t, worker_slot& s) noexcept override;
  void idle(worker_thread& t) noexcept override;
  bool sleep(worker_thread& t, std::uint32_t w) noexcept override;
  std::error_code close(worker_thread& t) noexcept override;

  std::atomic<std::size_t> rotations{0}, reopens{0}, fsyncs{0};
  std::atomic<bool> space_wait{false};  // wait_for_space: a batch waits now
  std::atomic<std::size_t> space_waits{0};

  // Made with the log and never replaced: its counters may be read anywhere.
  const log_compressor* compressor() const noexcept { return log_.file().compressor(); }

 private:
  std::error_code reopen(worker_thread& t) noexcept;
  bool wait_for_space(worker_thread& t) noexcept;
  void publish(worker_thread& t) noexcept;

  log_writer log_;
  std::error_code idle_error_;  // met while idle, for the next batch (or close())
};

std::error_code log_target::write(worker_thread& t, worker_slot& s) noexcept {
  const std::size_t chunks_before = t.chunks.load(std::memory_order_relaxed);
  std::error_code ec = std::exchange(idle_error_, {});
  // An error met while idle (a failed sync: earlier bytes may be gone) is
  // this batch's, never waited out.
  const bool idle_error = static_cast<bool>(ec);
  std::size_t skip = 0;  // chunks that landed in an earlier try (wait_for_space)
  for (;;) {
    log_.begin_call();
    if (!ec && (t.word.load(std::memory_order_relaxed) & reopen_asked)) ec = reopen(t);
    if (!ec) ec = s.single ? log_.start(s.chunk) : log_.start(s.batch, skip);
    while (!ec) {
      ec = log_.out().write_all();
      log_.account();
      if (ec || !log_.more()) break;
      ec = log_.start_part();
    }
    s.landed = ec ? log_.landed() : 0;
    log_.end_call();
    publish(t);
    // A full disk: the chunks that landed stay (a torn one was cut off
    // again), and the rest is tried again once the wait is over.
    const bool full = ec == std::errc::no_space_on_device || ec == static_cast<std::errc>(EDQUOT);
    if (idle_error || !full || !log_.file().options().wait_for_space) break;
    // What landed already counts as written while the batch waits (a
    // program that gives up the wait says how many did not, see
    // file_worker::chunks_written()).
    t.chunks.store(chunks_before + s.landed, std::memory_order_relaxed);
    if (!wait_for_space(t)) break;
    skip = s.landed;
    ec.clear();
  }
  space_wait.store(false, std::memory_order_relaxed);
  // A sync that fails fails every chunk (they may not stay), as in log_file_sink.
  if (!ec) ec = log_.file().sync_if_due();
  publish(t);
  return ec;
}

// wait_for_space: sleeps until space_retry has passed or a reopen is asked
// for (a SIGHUP after room was made). False at close(): the batch then
// fails. While it sleeps a producer may sleep too (in flush_sync, on its
// slot), so a push's or request_reopen()'s notify_one may wake that one
// instead: then the retry comes at the timeout, at most space_retry later.
bool log_target::wait_for_space(worker_thread& t) noexcept {
  if (!space_wait.exchange(true, std::memory_order_relaxed))
    space_waits.store(space_waits.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
  const auto until = std::chrono::steady_clock::now() + log_.file().options().space_retry;
  bool go_on = true;
  for (;;) {
    const std::uint32_t w = t.word.fetch_or(sleeping, std::memory_order_seq_cst) | sleeping;
    if (w & stopping) {
      go_on = false;
      break;
    }
    if (w & reopen_asked) break;
    const auto now = std::chrono::steady_clock::now();
    if (now >= until) break;
    sleep_on_for(t.word, w, until - now);
  }
  t.word.fetch_and(~sleeping, std::memory_order_relaxed);
  return go_on;
}

std::error_code log_target::reopen(worker_thread& t) noexcept {
  t.word.fetch_and(~reopen_asked, std::memory_order_relaxed);
  return log_.reopen();
}

void log_target::publish(worker_thread& t) noexcept {
  const log_rotation& file = log_.file();
  t.syscalls.store(log_.out().syscalls(), std::memory_order_relaxed);
  t.bytes.store(file.bytes_written(), std::memory_order_relaxed);
  rotations.store(file.rotations(), std::memory_order_relaxed);
  reopens.store(file.reopens(), std::memory_order_relaxed);
  fsyncs.store(file.fsyncs(), std::memory_order_relaxed);
}

// With no batch to write: a reopen that was asked for, a sync that is due.
// Their errors wait for the next batch. After an error, no more idle syncs
// (a failing fsync would otherwise be retried in a loop).
void log_target::idle(worker_thread& t) noexcept {
  std::error_code ec;
  if (t.word.load(std::memory_order_relaxed) & reopen_asked) ec = reopen(t);
  if (!ec && !idle_error_) ec = log_.file().sync_if_due();
  if (ec && !idle_error_) idle_error_ = ec;
  publish(t);
}

// Sleeps as sleep_on(), but only until the every_ms sync is due when one is
// owed. False when it is due (the worker gets up to do it).
bool log_target::sleep(worker_thread& t, std::uint32_t w) noexcept {
  std::chrono::steady_clock::time_point when;
  if (idle_error_ || !log_.file().sync_deadline(when)) {
    sleep_on(t.word, w);
    return true;
  }
  const auto now = std::chrono::steady_clock::now();
  if (now >= when) return false;
  sleep_on_for(t.word, w, when - now);
  return std::chrono::steady_clock::now() < when;
}

// After the thread is joined: an idle error, the last sync, the close; then
// the compression of the last rotated files, so that the files and the
// counts are final when close() returns.
std::error_code log_target::close(worker_thread& t) noexcept {
  log_.account();
  std::error_code ec = std::exchange(idle_error_, {});
  if (!ec) ec = log_.file().sync_if_dirty();
  const std::error_code closed = log_.file().close();
  publish(t);
  if (log_compressor* c = log_.file().compressor()) c->wait_idle();
  return ec ? ec : closed;
}

}  // namespace detail

// ---- log_worker

// The target is the worker's from the start (the unique_ptr made here):
// freed with it if the thread cannot start.
log_worker::log_worker(detail::log_target* log)
    : file_worker(std::unique_ptr<detail::worker_target>(log)), log_(log) {}

log_worker::log_worker(const std::string& path, const log_options& options)
    : log_worker(new detail::log_target(path, options)) {}

std::unique_ptr<log_worker> log_worker::open(const std::string& path, const log_options& options) {
  return std::make_unique<log_worker>(path, options);
}

std::unique_ptr<log_worker> log_worker::open(const std::string& path, const log_options& options,
                                             std::error_code& ec) noexcept {
  ec.clear();
  try {
    return open(path, options);
  } catch (const std::system_error& e) {  // stream_error with the errno, or the thread's
    ec = e.code();
  } catch (const std::bad_alloc&) {
    ec = std::make_error_code(std::errc::not_enough_memory);
  }
  return nullptr;
}

void log_worker::request_reopen() noexcept {
  std::atomic<std::uint32_t>& word = core().word;
  if (word.fetch_or(detail::reopen_asked, std::memory_order_seq_cst) & detail::sleeping) {
    word.fetch_and(~detail::sleeping, std::memory_order_relaxed);
    detail::wake(word, false);
  }
}

std::size_t log_worker::rotations() const noexcept { return log_->rotations.load(std::memory_order_relaxed); }
std::size_t log_worker::reopens() const noexcept { return log_->reopens.load(std::memory_order_relaxed); }
std::size_t log_worker::fsyncs() const noexcept { return log_->fsyncs.load(std::memory_order_relaxed); }
bool log_worker::waiting_for_space() const noexcept { return log_->space_wait.load(std::memory_order_relaxed); }
std::size_t log_worker::space_waits() const noexcept { return log_->space_waits.load(std::memory_order_relaxed); }

std::size_t log_worker::compressed() const noexcept {
  const detail::log_compressor* c = log_->compressor();
  return c ? c->compressed() : 0;
}
std::size_t log_worker::compress_failures() const noexcept {
  const detail::log_compressor* c = log_->compressor();
  return c ? c->failures() : 0;
}

}  // namespace sluice
