// file_worker and worker_sink: producers hand batches to one thread that
// writes them, and the completions come back to each producer's loop.
//
// ---- The protocol
//
// Shared between the threads, per worker (worker_core):
//
//   head   std::atomic<worker_slot*>: a stack of the slots handed over and
//          not yet taken. Producers push (CAS, seq_cst); the worker takes
//          them all at once (exchange with null, acquire) and reverses them
//          into handing order. As the worker only ever takes everything, the
//          stack has no ABA problem. At shutdown the worker swaps null for
//          a `closed` tag, after which a push fails.
//   word   std::atomic<uint32_t>, made once with the worker: the one word any
//          thread ever sleeps on (C++20 wait/notify; on Linux the futex
//          calls they end in, see sleep_on()), so a round trip needs no
//          allocation, no mutex and, while both threads are awake, no
//          syscall.
//            bit 0 sleeping  the worker found `head` empty and is about to
//                            sleep (set by the worker; cleared by whoever
//                            wakes it, with notify_one).
//            bit 1 stopping  close(): drain `head`, then exit (set once).
//            bit 2 waiters   some producer is about to sleep until its slot's
//                            `state` moves on (set by producers; cleared only
//                            by the worker, which then bumps the epoch).
//            bit 3 reopen    a log worker: request_reopen() was called (set
//                            by any thread, which then wakes a `sleeping`
//                            worker as a push does; cleared by the worker as
//                            it reopens, before its next batch or when idle).
//            bits 8-31 epoch bumped by the worker with notify_all when it
//                            ends a round and saw `waiters`, so that a
//                            sleeping producer wakes and looks at its slot.
//          The worker sleeps only when it owes nothing, and a producer
//          sleeps only while the worker still owes its slot a step, so the
//          two never sleep at once: notify_one for `sleeping` can only wake
//          the worker.
//
// Per producer (worker_slot, one per sink, made with it; never one per call):
//
//   state  std::atomic<uint32_t>, one round (one sink call) at a time:
//            bits 0-7 holds  rounds the worker has not yet let go of. The
//                            producer adds one as it pushes the slot; the
//                            worker takes it away as the very last thing it
//                            does for the round, after any post(). A count,
//                            not a flag: the next round may be pushed before
//                            that last step of the previous one.
//            bit 8  written  set by the worker once the bytes are written and
//                            `error` is stored: the decision point for
//                            posting. After it the worker reads nothing of
//                            the round but the (constant) loop pointer.
//            bit 9  claimed  set by the producer when it completes the round
//                            itself (flush_sync, or the sink's destructor);
//                            set at the push when the round starts inside
//                            flush_sync.
//          The producer resets `written` and `claimed` and adds its hold
//          (one CAS) before the push, which publishes the round's fields.
//
// Sleeping without losing a wakeup is Dekker's pattern, seq_cst on both
// sides: the producer pushes, then loads `word` and wakes the worker if it
// sees `sleeping`; the worker sets `sleeping`, then loads `head` and stays
// up if it sees a slot. One of the two sees the other. The same goes for a
// producer waiting on its slot: it sets `waiters`, then loads its `state`;
// the worker ends the round (an RMW on `state`), then loads `word` for
// `waiters`.
//
// Who completes a round: exactly one of
//   - the loop: the worker saw no `claimed` when it set `written`, so it
//     posted a task (loop::post) that calls write_done on the producer's
//     loop. The round held the loop (hold()) so that run() waits for it; the
//     task releases it. The task never waits for the worker: `written` was
//     set before the post.
//   - the producer: flush_sync or the destructor set `claimed`, then wait for
//     `written`. If `written` was already set when they claimed, a task is on
//     its way anyway: it finds the round done (stale_tasks) and only
//     releases the hold.
// The sink's destructor waits until `holds` is zero, so the worker is out of
// post() before the stream (and then its loop) can go away; if a task is
// still due, the slot outlives the sink and that task frees it.
#include "sluice/sinks/worker_sink.h"

#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <unistd.h>
#ifdef __linux__
#include <linux/futex.h>
#include <sys/syscall.h>
#endif

#include <cassert>
#include <cerrno>
#include <climits>
#include <chrono>
#include <optional>

#include "sluice/errors.h"
#include "sluice/loop.h"
#include "sluice/sinks/fd_writer.h"
#include "sluice/sinks/log_file.h"
#include "sluice/stream/writable.h"

namespace sluice {
namespace detail {

namespace {

constexpr std::uint32_t sleeping = 1u << 0;
constexpr std::uint32_t stopping = 1u << 1;
constexpr std::uint32_t waiters = 1u << 2;
constexpr std::uint32_t reopen_asked = 1u << 3;
constexpr std::uint32_t epoch_unit = 1u << 8;

constexpr std::uint32_t holds_mask = 0xff;
constexpr std::uint32_t written = 1u << 8;
constexpr std::uint32_t claimed = 1u << 9;

// How long a thread polls before it sleeps: about what sleeping and being
// woken costs (a futex wait and wake, a context switch: 10-20 us on a VM),
// so that spinning never costs more than twice the best choice. A producer
// in flush_sync waits for one batch, which a running worker writes within
// microseconds. The worker spins less: the next batch of a flush_sync loop
// follows within a microsecond, and a worker spinning in vain takes a core
// the producers may need (a preempted spinner also waits longer for the CPU
// than a woken sleeper does).
constexpr auto producer_spin = std::chrono::microseconds(20);
constexpr auto worker_spin = std::chrono::microseconds(10);

inline void cpu_relax() noexcept {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield");
#endif
}

// Sleeps while `word` holds `old` (or until woken, or spuriously), and
// wakes one or all of its sleepers. C++20's atomic wait and notify, except
// on Linux, where they are the futex calls that libstdc++'s wait() ends in:
// libstdc++ 12 first calls sched_yield() four times, and on a busy machine
// (a CPU-bound thread beside, an EEVDF kernel) each yield gives the CPU away
// for a whole time slice, milliseconds a wait. This file spins on its own.
static_assert(sizeof(std::atomic<std::uint32_t>) == 4 && std::atomic<std::uint32_t>::is_always_lock_free);

void sleep_on(std::atomic<std::uint32_t>& word, std::uint32_t old) noexcept {
#ifdef __linux__
  ::syscall(SYS_futex, &word, FUTEX_WAIT_PRIVATE, old, nullptr, nullptr, 0);
#else
  word.wait(old, std::memory_order_relaxed);
#endif
}

// sleep_on() for at most `timeout` (a log worker's every_ms sync). C++20 has
// no timed atomic wait: elsewhere than on Linux it sleeps untimed, and the
// idle sync waits for the next batch or close().
void sleep_on_for(std::atomic<std::uint32_t>& word, std::uint32_t old, std::chrono::nanoseconds timeout) noexcept {
#ifdef __linux__
  timespec ts{};
  ts.tv_sec = static_cast<time_t>(timeout.count() / 1'000'000'000);
  ts.tv_nsec = static_cast<long>(timeout.count() % 1'000'000'000);
  ::syscall(SYS_futex, &word, FUTEX_WAIT_PRIVATE, old, &ts, nullptr, 0);
#else
  (void)timeout;
  word.wait(old, std::memory_order_relaxed);
#endif
}

void wake(std::atomic<std::uint32_t>& word, bool all) noexcept {
#ifdef __linux__
  ::syscall(SYS_futex, &word, FUTEX_WAKE_PRIVATE, all ? INT_MAX : 1, nullptr, nullptr, 0);
#else
  if (all)
    word.notify_all();
  else
    word.notify_one();
#endif
}

// The CPU this thread runs on, or -1 when unknown. Spinning for a thread
// that last ran on this very CPU is pointless: it cannot run while we spin.
// (The scheduler likes to put two threads that wake each other on one CPU
// when the others are busy; there, spinning made each round trip cost the
// whole spin budget.)
int current_cpu() noexcept {
#ifdef __linux__
  return ::sched_getcpu();
#else
  return -1;
#endif
}

bool same_cpu(int a, int b) noexcept { return a >= 0 && a == b; }

// Polls `done()` for about `budget`; true as soon as it holds.
template <class Pred>
bool spin_until(Pred done, std::chrono::nanoseconds budget) noexcept {
  const auto until = std::chrono::steady_clock::now() + budget;
  for (;;) {
    for (int i = 0; i < 64; ++i) {
      if (done()) return true;
      cpu_relax();
    }
    if (std::chrono::steady_clock::now() >= until) return done();
  }
}

}  // namespace

// One producer's handle on the worker: the round in flight and its
// completion. Made with the sink, freed with it, or, when a posted
// completion is still on its way, by that completion.
struct worker_slot {
  // Shared with the worker (see the protocol).
  std::atomic<std::uint32_t> state{0};
  worker_slot* next = nullptr;  // the link in `head`, then in the worker's list
  // The round, written by the producer before the push.
  bool single = false;
  std::string_view chunk;
  write_batch batch;
  loop* home = nullptr;  // the producer's loop, set once by attach()
  int cpu = -1;          // where the producer ran when it pushed
  // Written by the worker before it sets `written`.
  std::error_code error;

  // The producer's own, touched from its thread only.
  std::optional<write_done> done;
  bool in_flight = false;   // a round was handed and is not yet completed
  bool held = false;        // the round holds `home` (hold()) for its task
  bool flushing = false;    // inside flush_sync: new rounds start claimed
  bool completing = false;  // inside write_done: flush_sync must not complete
  bool orphaned = false;    // the sink is gone; the last task frees the slot
  unsigned stale_tasks = 0;  // tasks still to come for rounds done here

  void on_posted() noexcept;
  void complete() noexcept;
};

struct worker_core {
  explicit worker_core(int fd) : out(fd) {}

  // What both sides touch on every round, on a cache line of its own.
  alignas(64) std::atomic<worker_slot*> head{nullptr};
  std::atomic<std::uint32_t> word{0};
  std::atomic<int> worker_cpu{-1};  // where the worker last ran (a hint)
  alignas(64) fd_writer out;  // the worker thread's
  int producer_cpu = -1;      // the worker's: where the last batch came from
  std::atomic<std::size_t> batches{0}, syscalls{0}, bytes{0};

  // A log worker's file (null for a plain fd), the worker thread's until it
  // is joined; `out` follows its fd. Published for other threads: the counters.
  std::unique_ptr<log_file> log;
  std::size_t seen = 0;         // out.bytes_written() already given to log
  std::error_code log_error;    // met while idle, for the next batch (or close())
  std::atomic<std::size_t> rotations{0}, reopens{0}, fsyncs{0};

  static worker_slot* closed() noexcept { return reinterpret_cast<worker_slot*>(std::uintptr_t{1}); }

  bool push(worker_slot& s) noexcept;
  template <class Pred>
  void wait_for(worker_slot& s, Pred done) noexcept;
  void run() noexcept;
  bool wait_for_work() noexcept;
  void write(worker_slot& s) noexcept;
  std::error_code write_log(worker_slot& s) noexcept;
  std::error_code follow(std::error_code ec) noexcept;
  std::error_code reopen_log() noexcept;
  void account_log() noexcept;
  void publish_log() noexcept;
  void log_idle() noexcept;
  bool sleep_for_sync(std::uint32_t w) noexcept;
  std::error_code close_log() noexcept;
  void stop() noexcept;
};

// ---- producer side

// Hands a slot to the worker; false once the worker has shut down.
bool worker_core::push(worker_slot& s) noexcept {
  worker_slot* old = head.load(std::memory_order_relaxed);
  do {
    if (old == closed()) return false;
    s.next = old;
  } while (!head.compare_exchange_weak(old, &s, std::memory_order_seq_cst, std::memory_order_relaxed));
  if (word.load(std::memory_order_seq_cst) & sleeping) {
    word.fetch_and(~sleeping, std::memory_order_relaxed);
    wake(word, false);
  }
  return true;
}

// Returns once `done(state)` holds: spins first, then sleeps on the word.
template <class Pred>
void worker_core::wait_for(worker_slot& s, Pred done) noexcept {
  if (!same_cpu(current_cpu(), worker_cpu.load(std::memory_order_relaxed)) &&
      spin_until([&] { return done(s.state.load(std::memory_order_acquire)); }, producer_spin))
    return;
  for (;;) {
    const std::uint32_t w = word.fetch_or(waiters, std::memory_order_seq_cst) | waiters;
    if (done(s.state.load(std::memory_order_seq_cst))) return;
    sleep_on(word, w);
  }
}

namespace {
bool is_written(std::uint32_t st) noexcept { return (st & written) != 0; }
bool is_let_go(std::uint32_t st) noexcept { return (st & holds_mask) == 0; }
}  // namespace

// The completion of the round, on the producer's thread.
void worker_slot::complete() noexcept {
  in_flight = false;
  const write_done d = *done;
  done.reset();
  const bool outer = completing;  // a sink call that failed at once completes inside another
  completing = true;
  d(error);
  completing = outer;
}

// The task the worker posts to the producer's loop, after `written`.
void worker_slot::on_posted() noexcept {
  home->release();
  if (stale_tasks > 0) {
    // Its round was completed by flush_sync or dropped by the destructor.
    if (--stale_tasks == 0 && orphaned) delete this;
    return;
  }
  held = false;
  complete();
}

// ---- worker side

void worker_core::run() noexcept {
  for (;;) {
    worker_slot* taken = head.exchange(nullptr, std::memory_order_acquire);
    if (taken == nullptr) {
      if (log) [[unlikely]]
        log_idle();
      if (!wait_for_work()) return;
      continue;
    }
    worker_slot* fifo = nullptr;  // the stack is newest first
    while (taken) {
      worker_slot* n = taken->next;
      taken->next = fifo;
      fifo = taken;
      taken = n;
    }
    while (fifo) {
      worker_slot* n = fifo->next;  // once written, the slot is the producer's again
      write(*fifo);
      fifo = n;
    }
  }
}

// Spins, then sleeps until a slot is pushed. False when told to stop and
// nothing is left; `head` is then closed to further pushes.
bool worker_core::wait_for_work() noexcept {
  if (!same_cpu(current_cpu(), producer_cpu) &&
      spin_until([this] { return head.load(std::memory_order_relaxed) != nullptr; }, worker_spin))
    return true;
  for (;;) {
    const std::uint32_t w = word.fetch_or(sleeping, std::memory_order_seq_cst) | sleeping;
    if (head.load(std::memory_order_seq_cst) != nullptr || (w & reopen_asked)) break;
    if (w & stopping) {
      worker_slot* expected = nullptr;
      if (head.compare_exchange_strong(expected, closed(), std::memory_order_seq_cst)) return false;
      break;  // one came in: write it first
    }
    if (log) [[unlikely]] {
      if (!sleep_for_sync(w)) break;  // the every_ms sync is due
      continue;
    }
    sleep_on(word, w);
  }
  word.fetch_and(~sleeping, std::memory_order_relaxed);
  return true;
}

void worker_core::write(worker_slot& s) noexcept {
  producer_cpu = s.cpu;
  if (const int cpu = current_cpu(); worker_cpu.load(std::memory_order_relaxed) != cpu)
    worker_cpu.store(cpu, std::memory_order_relaxed);
  if (log) [[unlikely]] {
    s.error = write_log(s);
  } else {
    if (s.single)
      out.start(s.chunk);
    else
      out.start(s.batch);
    s.error = out.write_all();
    // Written by this thread only: plain stores, for readers elsewhere.
    syscalls.store(out.syscalls(), std::memory_order_relaxed);
    bytes.store(out.bytes_written(), std::memory_order_relaxed);
  }
  batches.store(batches.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);

  // The end of the round; after it the slot is the producer's again.
  if (s.state.load(std::memory_order_acquire) & claimed) {
    // Claimed before it was written (inside flush_sync): never posted.
    // `written - 1` sets the bit (clear until now) and lets go, in one.
    s.state.fetch_add(written - 1, std::memory_order_seq_cst);
  } else {
    const std::uint32_t prev = s.state.fetch_or(written, std::memory_order_seq_cst);
    if (!(prev & claimed)) {
      worker_slot* const slot = &s;
      // Cannot fail for want of an eventfd: hold() made it.
      s.home->post([slot] { slot->on_posted(); });
    }
    s.state.fetch_sub(1, std::memory_order_seq_cst);
  }
  if (word.load(std::memory_order_seq_cst) & waiters) {
    word.fetch_add(epoch_unit - waiters, std::memory_order_relaxed);  // clears `waiters`, bumps the epoch
    wake(word, true);
  }
}

// ---- the worker side of a log file

// One batch into the log: as log_file_sink writes it, in parts that each
// fit the current file, rotating between them; but blocking, as a regular
// file's writes do anyway.
std::error_code worker_core::write_log(worker_slot& s) noexcept {
  std::error_code ec = std::exchange(log_error, {});
  if (!ec && (word.load(std::memory_order_relaxed) & reopen_asked)) ec = reopen_log();
  if (!ec && s.single) {
    if (!(ec = follow(log->prepare(s.chunk.size())))) {
      out.start(s.chunk);
      ec = out.write_all();
      account_log();
    }
  } else if (!ec) {
    write_batch::iterator next = s.batch.begin();
    std::size_t left = s.batch.size();
    while (!ec && left > 0) {
      if ((ec = follow(log->prepare((*next).size())))) break;
      const write_batch::iterator first = next;
      const std::size_t n = log->fitting(next, left);
      out.start(first, n);
      left -= n;
      ec = out.write_all();
      account_log();
    }
  }
  if (!ec) ec = log->sync_if_due();
  publish_log();
  return ec;
}

// After a rotation or reopen, `out` follows the log to its new fd.
std::error_code worker_core::follow(std::error_code ec) noexcept {
  if (log->fd() >= 0 && out.fd() != log->fd()) out.reset(log->fd());
  return ec;
}

std::error_code worker_core::reopen_log() noexcept {
  word.fetch_and(~reopen_asked, std::memory_order_relaxed);
  account_log();
  return follow(log->reopen());
}

void worker_core::account_log() noexcept {
  log->wrote(out.bytes_written() - seen);
  seen = out.bytes_written();
}

void worker_core::publish_log() noexcept {
  syscalls.store(out.syscalls(), std::memory_order_relaxed);
  bytes.store(log->bytes_written(), std::memory_order_relaxed);
  rotations.store(log->rotations(), std::memory_order_relaxed);
  reopens.store(log->reopens(), std::memory_order_relaxed);
  fsyncs.store(log->fsyncs(), std::memory_order_relaxed);
}

// With no batch to write: a reopen that was asked for, a sync that is due.
// Their errors wait for the next batch. After an error, no more idle syncs
// (a failing fsync would otherwise be retried in a loop).
void worker_core::log_idle() noexcept {
  std::error_code ec;
  if (word.load(std::memory_order_relaxed) & reopen_asked) ec = reopen_log();
  if (!ec && !log_error) ec = log->sync_if_due();
  if (ec && !log_error) log_error = ec;
  publish_log();
}

// Sleeps as sleep_on(), but only until the every_ms sync is due when one is
// owed. False when it is due (the worker gets up to do it).
bool worker_core::sleep_for_sync(std::uint32_t w) noexcept {
  std::chrono::steady_clock::time_point when;
  if (log_error || !log->sync_deadline(when)) {
    sleep_on(word, w);
    return true;
  }
  const auto now = std::chrono::steady_clock::now();
  if (now >= when) return false;
  sleep_on_for(word, w, when - now);
  return std::chrono::steady_clock::now() < when;
}

// After the thread is joined: an idle error, the last sync, the close.
std::error_code worker_core::close_log() noexcept {
  account_log();
  std::error_code ec = std::exchange(log_error, {});
  if (!ec) ec = log->sync_if_dirty();
  const std::error_code closed = log->close();
  publish_log();
  return ec ? ec : closed;
}

void worker_core::stop() noexcept {
  word.fetch_or(stopping, std::memory_order_seq_cst);
  wake(word, true);
}

}  // namespace detail

// ---- file_worker

namespace {

int open_fd(const std::string& path, const file_options& options) noexcept {
  int flags = O_WRONLY | O_CREAT | O_CLOEXEC;
  switch (options.mode) {
    case file_options::open_mode::append: flags |= O_APPEND; break;
    case file_options::open_mode::truncate: flags |= O_TRUNC; break;
    case file_options::open_mode::exclusive: flags |= O_EXCL; break;
  }
  int fd;
  do {
    fd = ::open(path.c_str(), flags, options.permissions);
  } while (fd < 0 && errno == EINTR);
  return fd;
}

int open_or_throw(const std::string& path, const file_options& options) {
  const int fd = open_fd(path, options);
  if (fd < 0) throw stream_error(errno, std::system_category(), "cannot open " + path);
  return fd;
}

}  // namespace

file_worker::file_worker(int fd, bool close_fd)
    : core_(std::make_shared<detail::worker_core>(fd)), fd_(fd), close_fd_(close_fd) {
  start();
}

// The log is the core's: closed with it if the thread cannot start.
file_worker::file_worker(const std::string& path, const log_options& options) : fd_(-1), close_fd_(false) {
  auto log = std::make_unique<detail::log_file>(path, options);
  core_ = std::make_shared<detail::worker_core>(log->fd());
  core_->log = std::move(log);
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
    : file_worker(open_or_throw(path, options), true) {
  fsync_at_close_ = options.fsync_at_end;
}

file_worker::~file_worker() { close(); }

std::error_code file_worker::close() noexcept {
  if (closed_) return close_error_;
  closed_ = true;
  core_->stop();
  thread_.join();
  if (core_->log) return close_error_ = core_->close_log();
  if (fsync_at_close_ && ::fsync(fd_) != 0) close_error_ = {errno, std::system_category()};
  if (close_fd_ && ::close(fd_) != 0 && !close_error_) close_error_ = {errno, std::system_category()};
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

void file_worker::request_reopen() noexcept {
  if (!core_->log) return;
  std::atomic<std::uint32_t>& word = core_->word;
  if (word.fetch_or(detail::reopen_asked, std::memory_order_seq_cst) & detail::sleeping) {
    word.fetch_and(~detail::sleeping, std::memory_order_relaxed);
    detail::wake(word, false);
  }
}

// ---- worker_sink

worker_sink::worker_sink(std::shared_ptr<detail::worker_core> core)
    : core_(std::move(core)), slot_(new detail::worker_slot) {}

// The writable's destructor calls this with its requests still alive, and
// pays their callbacks afterwards: wait for the worker to be done with them,
// and out of post(), since the loop may go next.
worker_sink::~worker_sink() {
  drain_sync();
  detail::worker_slot& s = *slot_;
  core_->wait_for(s, detail::is_let_go);
  if (s.stale_tasks > 0)
    s.orphaned = true;
  else
    delete slot_;
}

// Drops the round in flight (its write_done is never called), once the
// worker is done with it and out of post(), since the loop may go next.
std::error_code worker_sink::drain_sync() noexcept {
  detail::worker_slot& s = *slot_;
  if (!s.in_flight) return {};
  const std::uint32_t prev = s.state.fetch_or(detail::claimed, std::memory_order_seq_cst);
  if (!(prev & detail::claimed) && (prev & detail::written))
    ++s.stale_tasks;  // its task is on the way and releases the hold
  else if (s.held)
    s.home->release();
  s.held = false;
  s.in_flight = false;
  s.done.reset();
  core_->wait_for(s, detail::is_let_go);
  return s.error;
}

// A round claimed from the start, as inside flush_sync: never posted, no
// hold on the loop, and waited for here.
std::error_code worker_sink::write_sync(const write_batch& batch) noexcept {
  detail::worker_slot& s = *slot_;
  assert(!s.in_flight);
  s.single = false;
  s.batch = batch;
  s.cpu = detail::current_cpu();
  std::uint32_t st = s.state.load(std::memory_order_relaxed);
  while (!s.state.compare_exchange_weak(st, (st & detail::holds_mask) + (1 | detail::claimed),
                                        std::memory_order_relaxed)) {
  }
  if (!core_->push(s)) {
    s.state.fetch_sub(1, std::memory_order_relaxed);
    return {EBADF, std::system_category()};
  }
  core_->wait_for(s, detail::is_written);
  return s.error;
}

void worker_sink::attach(loop& l) { slot_->home = &l; }

void worker_sink::write(std::string_view chunk, write_done done) {
  slot_->single = true;
  slot_->chunk = chunk;
  hand_over(done);
}

void worker_sink::writev(const write_batch& batch, write_done done) {
  slot_->single = false;
  slot_->batch = batch;
  hand_over(done);
}

void worker_sink::hand_over(write_done done) {
  detail::worker_slot& s = *slot_;
  assert(!s.in_flight);
  s.done.emplace(done);
  s.in_flight = true;
  s.cpu = detail::current_cpu();
  // Inside flush_sync the round is completed right there: it is claimed
  // from the start, is never posted, and needs no hold on the loop.
  s.held = !s.flushing;
  if (s.held) s.home->hold();
  // A new round: `written` and `claimed` cleared, one more hold. The worker
  // may still be letting go of the previous round (a CAS, not a store).
  const std::uint32_t start = 1 | (s.flushing ? detail::claimed : 0);
  std::uint32_t st = s.state.load(std::memory_order_relaxed);
  while (!s.state.compare_exchange_weak(st, (st & detail::holds_mask) + start, std::memory_order_relaxed)) {
  }
  if (!core_->push(s)) {
    // The worker has shut down and its fd may be closed.
    s.state.fetch_sub(1, std::memory_order_relaxed);
    if (s.held) s.home->release();
    s.held = false;
    s.error = {EBADF, std::system_category()};
    s.complete();
  }
}

// Completes the round in flight here and now: waits for the worker to be
// done with it, then calls write_done (its callbacks run inside).
void worker_sink::complete_here() noexcept {
  detail::worker_slot& s = *slot_;
  const std::uint32_t prev = s.state.fetch_or(detail::claimed, std::memory_order_seq_cst);
  core_->wait_for(s, detail::is_written);
  if (!(prev & detail::claimed) && (prev & detail::written))
    ++s.stale_tasks;  // posted before the claim: the task only releases the hold
  else if (s.held)
    s.home->release();
  s.held = false;
  s.complete();
}

std::error_code worker_sink::flush(writable& stream) {
  detail::worker_slot& s = *slot_;
  if (s.completing) {
    // Inside this stream's own write_done: see flush_sync(). What is held
    // is handed over all the same, and waited for.
    stream.flush_held();
    if (s.in_flight) {
      core_->wait_for(s, detail::is_written);
      if (s.error) return s.error;
    }
    return stream.errored();
  }
  s.flushing = true;
  stream.flush_held();
  while (s.in_flight) complete_here();
  s.flushing = false;
  if (const std::error_code ec = stream.errored()) return ec;
  if (stream.destroyed() && stream.writable_length() > 0) return make_error_code(errc::destroyed);
  return {};
}

std::error_code flush_sync(writable& stream) {
  auto* s = dynamic_cast<worker_sink*>(&stream.get_sink());
  if (s == nullptr) return make_error_code(errc::method_not_implemented);
  return s->flush(stream);
}

// Differs from Node: a byte stream over a worker defaults to a high-water
// mark of worker_high_water_mark, not 16 KiB. Each 'drain' costs a round trip
// to the worker thread; at 16 KiB a log producer spent ~10-20% of its CPU time
// on them (log_bench: 57,000 hand-overs for 5M lines, 9,000 at 1 MiB).
std::unique_ptr<writable> make_worker_writable(file_worker& worker, const writable_options& options) {
  if (options.high_water_mark || options.object_mode) return std::make_unique<writable>(worker.make_sink(), options);
  writable_options o = options;
  o.high_water_mark = worker_high_water_mark;
  return std::make_unique<writable>(worker.make_sink(), o);
}

std::unique_ptr<writable> make_worker_writable(file_worker& worker) {
  return make_worker_writable(worker, writable_options{});
}

}  // namespace sluice
