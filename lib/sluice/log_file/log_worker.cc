// log_worker: the log file as a file_worker's thread writes it, through the
// worker_target face that the sinks know (sinks/detail/worker_thread.h).
#include "sluice/log_file/log_worker.h"

#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <deque>
#include <mutex>
#include <new>
#include <thread>
#include <utility>
#include <vector>

#include "sluice/base/detail/syscalls.h"
#include "sluice/log_file/detail/log_writer.h"
#include "sluice/loop/loop.h"
#include "sluice/sinks/detail/worker_thread.h"

namespace sluice {
namespace detail {

// One loop's log_worker::sync_watch: what its posted task reads.
struct sync_watch_state {
  loop* home;
  std::function<void(std::uint64_t, std::error_code)> fn;
  std::atomic<std::uint64_t> synced{0};
  std::atomic<int> error{0};         // the errno of a failed sync, once
  std::atomic<bool> queued{false};   // a task is posted and has not run yet
  bool alive = true;                 // the loop's: false once the watch is gone
};

// log_options::sync_behind's group commit. The worker writes, then tells
// `written`; each syncer thread takes everything written that no sync has
// begun to cover, fdatasyncs it and moves `synced` to it. A syncer is free
// as soon as its fsync returns, and another may start while one runs, so a
// sync starts as soon as there is something new (with two, every line
// waits for at most the rest of one sync and then its own, not for one
// whole sync before its own begins).
//
// Exactly what may be acknowledged: a mark is taken, under `mutex`, with
// the fd the bytes below it went to; the worker changes the fd (rotation,
// reopen, following another writer's rotation, close) only under `mutex`,
// after syncing the old file (log_rotation syncs a dirty file before it
// lets it go). So every byte below a mark is in the file synced (a dup of
// the fd, which stays valid whatever the worker closes) or in an older
// file synced already; and `synced` only moves to a mark whose sync began
// after the mark was taken. A sync that failed, here or the worker's,
// stops `synced` for good: the bytes after it may be lost.
//
// Linux reports a writeback error once to each open file description
// (errseq), not to each fsync: two syncs through one description (a dup)
// may see it in either, so the one that did not could return 0 over the
// lost pages and be acknowledged first. So each sync opens the file anew
// (/proc/self/fd, its own description, which sees every error it has not
// seen and any no one has seen), and the marks are published in the order
// their syncs began: a mark moves `synced` only once every sync begun
// before it has returned without error.
class sync_group {
 public:
  static constexpr int syncers = 2;

  explicit sync_group(log_writer& log) : log_(log) {}
  ~sync_group() { stop(); }
  sync_group(const sync_group&) = delete;
  sync_group& operator=(const sync_group&) = delete;

  void start() {
    // The threads take no signals, as the worker's.
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, &old);
    try {
      for (int i = 0; i < syncers; ++i)
        threads_.emplace_back([this] {
          pthread_setname_np(pthread_self(), "sluice-sync");
          run();
        });
    } catch (...) {
      pthread_sigmask(SIG_SETMASK, &old, nullptr);
      stop();
      throw;
    }
    pthread_sigmask(SIG_SETMASK, &old, nullptr);
  }

  // At close, after the worker's thread is joined: what is left is
  // close()'s to sync.
  void stop() noexcept {
    {
      std::lock_guard lock(mutex_);
      stopping_ = true;
    }
    work_.notify_all();
    for (auto& t : threads_) t.join();
    threads_.clear();
  }

  // The worker's: held around whatever may change the fd.
  std::mutex& fd_mutex() noexcept { return mutex_; }

  // The worker's, after a batch: the log's byte count now.
  void wrote(std::uint64_t bytes) noexcept {
    {
      std::lock_guard lock(mutex_);
      if (bytes <= written_) return;
      written_ = bytes;
    }
    work_.notify_one();
  }

  std::uint64_t synced() const noexcept { return synced_.load(std::memory_order_acquire); }
  std::size_t fsyncs() const noexcept { return fsyncs_.load(std::memory_order_relaxed); }

  void add(const std::shared_ptr<sync_watch_state>& w) {
    std::lock_guard lock(mutex_);
    watches_.push_back(w);
    w->synced.store(synced_.load(std::memory_order_relaxed), std::memory_order_relaxed);
    if (error_) tell(w);
  }
  void remove(const sync_watch_state* w) noexcept {
    std::lock_guard lock(mutex_);
    std::erase_if(watches_, [w](const auto& p) { return p.get() == w; });
  }

 private:
  void run() noexcept {
    std::unique_lock lock(mutex_);
    for (;;) {
      work_.wait(lock, [this] { return stopping_ || (written_ > started_ && !error_); });
      if (stopping_) return;
      const std::uint64_t mark = written_;
      started_ = mark;
      flight_.push_back({mark, false});
      in_flight& me = flight_.back();  // a deque's elements stay where they are
      const int fd = open_again(log_.file().fd());
      std::error_code ec;
      if (fd < 0) ec = log_.file().fd() < 0 ? std::make_error_code(std::errc::bad_file_descriptor) : last_error();
      lock.unlock();
      if (!ec) {
        int r;
        do {
          r = sys.fdatasync(fd);
        } while (r != 0 && errno == EINTR);
        if (r != 0) ec = last_error();
        ::close(fd);
        fsyncs_.fetch_add(1, std::memory_order_relaxed);
      }
      lock.lock();
      me.done = true;
      // The worker's own sync (at a rotation) may have taken the error
      // that this one would have seen: it says so under the mutex.
      if (!ec && log_.file().sync_failed()) ec = std::make_error_code(std::errc::io_error);
      if (ec) {
        if (!error_) {
          error_ = ec;
          for (const auto& w : watches_) tell(w);
        }
        continue;
      }
      // The syncs that began first and have all returned: their last mark.
      std::uint64_t mark_done = 0;
      while (!flight_.empty() && flight_.front().done) {
        mark_done = flight_.front().mark;
        flight_.pop_front();
      }
      if (mark_done > synced_.load(std::memory_order_relaxed) && !error_) {
        synced_.store(mark_done, std::memory_order_release);
        for (const auto& w : watches_) tell(w);
      }
    }
  }

  // A description of its own of the file `fd` is open on. Without /proc,
  // a dup (one description shared with the worker; the order of
  // publication still holds).
  static int open_again(int fd) noexcept {
    if (fd < 0) return -1;
    char path[32];
    std::snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
    const int own = ::open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
    return own >= 0 ? own : ::dup(fd);
  }

  // Under the mutex: the watch's loop hears of it (one task at a time).
  static void tell_one(const std::shared_ptr<sync_watch_state>& w, std::uint64_t synced, int error) noexcept {
    w->synced.store(synced, std::memory_order_seq_cst);
    if (error) w->error.store(error, std::memory_order_seq_cst);
    if (w->queued.exchange(true, std::memory_order_seq_cst)) return;  // the task to come reads it
    try {
      w->home->post([w] {
        w->queued.store(false, std::memory_order_seq_cst);
        if (!w->alive) return;
        const int e = w->error.load(std::memory_order_seq_cst);
        w->fn(w->synced.load(std::memory_order_seq_cst),
              e ? std::error_code(e, std::system_category()) : std::error_code());
      });
    } catch (...) {
      w->queued.store(false, std::memory_order_seq_cst);  // out of memory: the next sync tells
    }
  }
  void tell(const std::shared_ptr<sync_watch_state>& w) noexcept {
    tell_one(w, synced_.load(std::memory_order_relaxed), error_ ? error_.value() : 0);
  }

  log_writer& log_;
  std::mutex mutex_;
  std::condition_variable work_;
  std::uint64_t written_ = 0;  // the log's byte count after the last batch
  std::uint64_t started_ = 0;  // the mark of the last sync to begin
  struct in_flight {
    std::uint64_t mark;
    bool done;
  };
  std::deque<in_flight> flight_;  // the syncs running or not yet published, in the order they began
  std::error_code error_;
  bool stopping_ = false;
  std::atomic<std::uint64_t> synced_{0};
  std::atomic<std::size_t> fsyncs_{0};
  std::vector<std::shared_ptr<sync_watch_state>> watches_;
  std::vector<std::thread> threads_;
};

// The log, on the worker thread: one batch as log_file_sink writes it, in
// parts that each fit the current file, rotating between them; but
// blocking, as a regular file's writes do anyway. The counters are
// published for other threads.
class log_target final : public worker_target {
 public:
  log_target(const std::string& path, const log_options& options)
      : log_(std::make_unique<log_rotation>(path, options)) {
    if (options.sync_behind && options.fsync == log_options::fsync_policy::every_bytes && options.fsync_bytes == 0) {
      behind_ = std::make_unique<sync_group>(log_);
      behind_->start();
    }
  }

  std::error_code write(worker_thread& t, worker_slot& s) noexcept override;
  void idle(worker_thread& t) noexcept override;
  bool sleep(worker_thread& t, std::uint32_t w) noexcept override;
  std::error_code close(worker_thread& t) noexcept override;

  std::atomic<std::size_t> rotations{0}, reopens{0}, fsyncs{0};
  std::atomic<bool> space_wait{false};  // wait_for_space: a batch waits now
  std::atomic<std::size_t> space_waits{0};
  // log_options::sync_behind: the syncers; null without it.
  std::unique_ptr<sync_group> behind_;

  // Made with the log and never replaced: its counters may be read anywhere.
  const log_compressor* compressor() const noexcept { return log_.file().compressor(); }

 private:
  std::error_code reopen(worker_thread& t) noexcept;
  bool wait_for_space(worker_thread& t) noexcept;
  void publish(worker_thread& t) noexcept;
  // Held around what may change the fd, while syncers sync behind.
  std::unique_lock<std::mutex> fd_lock() noexcept {
    return behind_ ? std::unique_lock(behind_->fd_mutex()) : std::unique_lock<std::mutex>();
  }

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
    if (!ec && (t.word.load(std::memory_order_relaxed) & reopen_asked)) {
      const auto lock = fd_lock();
      ec = reopen(t);
    }
    if (!ec) {
      const auto lock = fd_lock();
      ec = s.single ? log_.start(s.chunk) : log_.start(s.batch, skip);
    }
    while (!ec) {
      ec = log_.out().write_all();
      log_.account();
      if (ec || !log_.more()) break;
      const auto lock = fd_lock();
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
  // Behind: the syncers take it from here.
  if (behind_)
    behind_->wrote(log_.file().bytes_written());
  else if (!ec)
    ec = log_.file().sync_if_due();
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
  if (t.word.load(std::memory_order_relaxed) & reopen_asked) {
    const auto lock = fd_lock();
    ec = reopen(t);
  }
  if (!ec && !idle_error_ && !behind_) ec = log_.file().sync_if_due();
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
  if (behind_) behind_->stop();
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
std::size_t log_worker::fsyncs() const noexcept {
  return log_->fsyncs.load(std::memory_order_relaxed) + (log_->behind_ ? log_->behind_->fsyncs() : 0);
}

std::uint64_t log_worker::synced() const noexcept { return log_->behind_ ? log_->behind_->synced() : 0; }

log_worker::sync_watch::sync_watch(detail::sync_group& group, std::shared_ptr<detail::sync_watch_state> state)
    : group_(group), state_(std::move(state)) {
  group_.add(state_);
}

log_worker::sync_watch::~sync_watch() {
  group_.remove(state_.get());
  state_->alive = false;  // a task already posted does nothing
}

std::unique_ptr<log_worker::sync_watch> log_worker::watch_syncs(
    loop& l, std::function<void(std::uint64_t, std::error_code)> fn) {
  if (!log_->behind_) return nullptr;
  auto state = std::make_shared<detail::sync_watch_state>();
  state->home = &l;
  state->fn = std::move(fn);
  return std::unique_ptr<sync_watch>(new sync_watch(*log_->behind_, std::move(state)));
}
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
