// file_worker: the thread that writes batches handed over by worker_sinks
// (see worker_protocol.h), as fd_sink writes, or into a rotated log as
// log_file_sink does.
#include "sluice/sinks/file_worker.h"

#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <utility>

#include "sluice/base/errors.h"
#include "sluice/sinks/detail/fd_writer.h"
#include "sluice/detail/log_writer.h"
#include "sluice/sinks/detail/open_file.h"
#include "sluice/sinks/detail/worker_protocol.h"
#include "sluice/base/detail/syscalls.h"

namespace sluice {
namespace detail {

// The worker thread's side of a file_worker: its writer, a log worker's
// file, and the counters it publishes.
struct worker_thread : worker_core {
  explicit worker_thread(int fd) : out(fd) {}

  alignas(64) fd_writer out;  // the worker thread's
  std::atomic<std::size_t> batches{0}, syscalls{0}, bytes{0};

  // A log worker's file and its writer (null for a plain fd, which `out`
  // writes), the worker thread's until it is joined. Published for other
  // threads: the counters.
  std::unique_ptr<log_writer> log;
  std::error_code log_error;    // met while idle, for the next batch (or close())
  std::atomic<std::size_t> rotations{0}, reopens{0}, fsyncs{0};
  std::atomic<bool> space_wait{false};  // wait_for_space: a batch waits now
  std::atomic<std::size_t> space_waits{0};
  // Chunks written whole, each batch's once it is done, and the part of
  // one that waits for space that landed so far.
  std::atomic<std::size_t> chunks{0};
  std::size_t chunks_before_ = 0;  // chunks at the start of the batch in write_log()

  void run() noexcept;
  bool sleep(std::uint32_t w) noexcept;
  void write(worker_slot& s) noexcept;
  std::error_code write_log(worker_slot& s) noexcept;
  std::error_code reopen_log() noexcept;
  bool wait_for_space() noexcept;
  void publish_log() noexcept;
  void log_idle() noexcept;
  bool sleep_for_sync(std::uint32_t w) noexcept;
  std::error_code close_log() noexcept;
};

// The thread: every batch pushed, in handing order, then a sleep until the next.
void worker_thread::run() noexcept {
  for (;;) {
    worker_slot* fifo = take();
    if (fifo == nullptr) {
      if (log) [[unlikely]]
        log_idle();
      if (!wait_for_work([this](std::uint32_t w) { return sleep(w); })) return;
      continue;
    }
    while (fifo) {
      worker_slot* n = fifo->next;  // once written, the slot is the producer's again
      write(*fifo);
      fifo = n;
    }
  }
}

// Sleeps on `word` while it holds `w`; false when a log's every_ms sync is due.
bool worker_thread::sleep(std::uint32_t w) noexcept {
  if (log) [[unlikely]]
    return sleep_for_sync(w);
  sleep_on(word, w);
  return true;
}

void worker_thread::write(worker_slot& s) noexcept {
  begin_round(s);
  const std::size_t before = chunks.load(std::memory_order_relaxed);
  const std::size_t n = s.single ? 1 : s.batch.size();
  if (log) [[unlikely]] {
    s.error = write_log(s);
  } else {
    if (s.single)
      out.start(s.chunk);
    else
      out.start(s.batch);
    s.error = out.write_all();
    s.landed = out.landed();
    // Written by this thread only: plain stores, for readers elsewhere.
    syscalls.store(out.syscalls(), std::memory_order_relaxed);
    bytes.store(out.bytes_written(), std::memory_order_relaxed);
  }
  batches.store(batches.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
  chunks.store(before + (s.error ? s.landed : n), std::memory_order_relaxed);

  end_round(s);
}

// ---- the worker side of a log file

// One batch into the log: as log_file_sink writes it, in parts that each
// fit the current file, rotating between them; but blocking, as a regular
// file's writes do anyway.
std::error_code worker_thread::write_log(worker_slot& s) noexcept {
  chunks_before_ = chunks.load(std::memory_order_relaxed);
  std::error_code ec = std::exchange(log_error, {});
  // An error met while idle (a failed sync: earlier bytes may be gone) is
  // this batch's, never waited out.
  const bool idle_error = static_cast<bool>(ec);
  std::size_t skip = 0;  // chunks that landed in an earlier try (wait_for_space)
  for (;;) {
    log->begin_call();
    if (!ec && (word.load(std::memory_order_relaxed) & reopen_asked)) ec = reopen_log();
    if (!ec) ec = s.single ? log->start(s.chunk) : log->start(s.batch, skip);
    while (!ec) {
      ec = log->out().write_all();
      log->account();
      if (ec || !log->more()) break;
      ec = log->start_part();
    }
    s.landed = ec ? log->landed() : 0;
    log->end_call();
    publish_log();
    // A full disk: the chunks that landed stay (a torn one was cut off
    // again), and the rest is tried again once the wait is over.
    const bool full = ec == std::errc::no_space_on_device || ec == static_cast<std::errc>(EDQUOT);
    if (idle_error || !full || !log->file().options().wait_for_space) break;
    // What landed already counts as written while the batch waits (a
    // program that gives up the wait says how many did not, see chunks()).
    chunks.store(chunks_before_ + s.landed, std::memory_order_relaxed);
    if (!wait_for_space()) break;
    skip = s.landed;
    ec.clear();
  }
  space_wait.store(false, std::memory_order_relaxed);
  // A sync that fails fails every chunk (they may not stay), as in log_file_sink.
  if (!ec) ec = log->file().sync_if_due();
  publish_log();
  return ec;
}

// wait_for_space: sleeps until space_retry has passed or a reopen is asked
// for (a SIGHUP after room was made). False at close(): the batch then
// fails. While it sleeps a producer may sleep too (in flush_sync, on its
// slot), so a push's or request_reopen()'s notify_one may wake that one
// instead: then the retry comes at the timeout, at most space_retry later.
bool worker_thread::wait_for_space() noexcept {
  if (!space_wait.exchange(true, std::memory_order_relaxed))
    space_waits.store(space_waits.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
  const auto until = std::chrono::steady_clock::now() + log->file().options().space_retry;
  bool go_on = true;
  for (;;) {
    const std::uint32_t w = word.fetch_or(sleeping, std::memory_order_seq_cst) | sleeping;
    if (w & stopping) {
      go_on = false;
      break;
    }
    if (w & reopen_asked) break;
    const auto now = std::chrono::steady_clock::now();
    if (now >= until) break;
    sleep_on_for(word, w, until - now);
  }
  word.fetch_and(~sleeping, std::memory_order_relaxed);
  return go_on;
}

std::error_code worker_thread::reopen_log() noexcept {
  word.fetch_and(~reopen_asked, std::memory_order_relaxed);
  return log->reopen();
}

void worker_thread::publish_log() noexcept {
  const log_rotation& file = log->file();
  syscalls.store(log->out().syscalls(), std::memory_order_relaxed);
  bytes.store(file.bytes_written(), std::memory_order_relaxed);
  rotations.store(file.rotations(), std::memory_order_relaxed);
  reopens.store(file.reopens(), std::memory_order_relaxed);
  fsyncs.store(file.fsyncs(), std::memory_order_relaxed);
}

// With no batch to write: a reopen that was asked for, a sync that is due.
// Their errors wait for the next batch. After an error, no more idle syncs
// (a failing fsync would otherwise be retried in a loop).
void worker_thread::log_idle() noexcept {
  std::error_code ec;
  if (word.load(std::memory_order_relaxed) & reopen_asked) ec = reopen_log();
  if (!ec && !log_error) ec = log->file().sync_if_due();
  if (ec && !log_error) log_error = ec;
  publish_log();
}

// Sleeps as sleep_on(), but only until the every_ms sync is due when one is
// owed. False when it is due (the worker gets up to do it).
bool worker_thread::sleep_for_sync(std::uint32_t w) noexcept {
  std::chrono::steady_clock::time_point when;
  if (log_error || !log->file().sync_deadline(when)) {
    sleep_on(word, w);
    return true;
  }
  const auto now = std::chrono::steady_clock::now();
  if (now >= when) return false;
  sleep_on_for(word, w, when - now);
  return std::chrono::steady_clock::now() < when;
}

// After the thread is joined: an idle error, the last sync, the close; then
// the compression of the last rotated files, so that the files and the
// counts are final when close() returns.
std::error_code worker_thread::close_log() noexcept {
  log->account();
  std::error_code ec = std::exchange(log_error, {});
  if (!ec) ec = log->file().sync_if_dirty();
  const std::error_code closed = log->file().close();
  publish_log();
  if (log_compressor* c = log->file().compressor()) c->wait_idle();
  return ec ? ec : closed;
}

}  // namespace detail

// ---- file_worker

file_worker::file_worker(int fd, bool close_fd)
    : core_(std::make_shared<detail::worker_thread>(fd)), fd_(fd), close_fd_(close_fd) {
  start();
}

// The log is the core's: closed with it if the thread cannot start.
file_worker::file_worker(const std::string& path, const log_options& options) : fd_(-1), close_fd_(false) {
  auto log = std::make_unique<detail::log_rotation>(path, options);
  core_ = std::make_shared<detail::worker_thread>(log->fd());
  core_->log = std::make_unique<detail::log_writer>(std::move(log));
  start();
}

std::unique_ptr<file_worker> file_worker::open_log(const std::string& path, const log_options& options,
                                                   std::error_code& ec) noexcept {
  ec.clear();
  try {
    return std::make_unique<file_worker>(path, options);
  } catch (const std::system_error& e) {  // stream_error with the errno, or the thread's
    ec = e.code();
  } catch (const std::bad_alloc&) {
    ec = std::make_error_code(std::errc::not_enough_memory);
  }
  return nullptr;
}

void file_worker::start() {
  // The thread takes no signals: they stay with the program's own threads.
  // (SIGPIPE from its writes is handled by fd_writer.)
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_BLOCK, &all, &old);
  try {
    thread_ = std::thread([core = core_.get()] {
      pthread_setname_np(pthread_self(), "sluice-worker");
      core->run();
    });
  } catch (...) {
    pthread_sigmask(SIG_SETMASK, &old, nullptr);
    if (close_fd_) ::close(fd_);
    throw;
  }
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
}

file_worker::file_worker(const std::string& path, const file_options& options)
    : file_worker(detail::open_or_throw(detail::open_fd(path, options), path), true) {
  fsync_at_close_ = options.fsync_at_end;
}

file_worker::~file_worker() { close(); }

std::error_code file_worker::close() noexcept {
  if (closed_) return close_error_;
  closed_ = true;
  core_->stop();
  thread_.join();
  if (core_->log) return close_error_ = core_->close_log();
  if (fsync_at_close_ && detail::sys.fsync(fd_) != 0) close_error_ = {errno, std::system_category()};
  if (close_fd_ && detail::sys.close(fd_) != 0 && !close_error_) close_error_ = {errno, std::system_category()};
  return close_error_;
}

std::unique_ptr<worker_sink> file_worker::make_sink() {
  return std::unique_ptr<worker_sink>(new worker_sink(core_));
}

std::size_t file_worker::batches() const noexcept { return core_->batches.load(std::memory_order_relaxed); }
std::size_t file_worker::syscalls() const noexcept { return core_->syscalls.load(std::memory_order_relaxed); }
std::size_t file_worker::bytes_written() const noexcept { return core_->bytes.load(std::memory_order_relaxed); }
std::size_t file_worker::rotations() const noexcept { return core_->rotations.load(std::memory_order_relaxed); }
std::size_t file_worker::reopens() const noexcept { return core_->reopens.load(std::memory_order_relaxed); }
std::size_t file_worker::fsyncs() const noexcept { return core_->fsyncs.load(std::memory_order_relaxed); }
bool file_worker::waiting_for_space() const noexcept { return core_->space_wait.load(std::memory_order_relaxed); }
std::size_t file_worker::space_waits() const noexcept { return core_->space_waits.load(std::memory_order_relaxed); }
std::size_t file_worker::chunks_written() const noexcept { return core_->chunks.load(std::memory_order_relaxed); }

// The compressor is the log's, made with it and never replaced: its
// counters may be read from any thread.
std::size_t file_worker::compressed() const noexcept {
  const detail::log_compressor* c = core_->log ? core_->log->file().compressor() : nullptr;
  return c ? c->compressed() : 0;
}
std::size_t file_worker::compress_failures() const noexcept {
  const detail::log_compressor* c = core_->log ? core_->log->file().compressor() : nullptr;
  return c ? c->failures() : 0;
}

void file_worker::request_reopen() noexcept {
  if (!core_->log) return;
  std::atomic<std::uint32_t>& word = core_->word;
  if (word.fetch_or(detail::reopen_asked, std::memory_order_seq_cst) & detail::sleeping) {
    word.fetch_and(~detail::sleeping, std::memory_order_relaxed);
    detail::wake(word, false);
  }
}

}  // namespace sluice
