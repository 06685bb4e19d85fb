// The loop: Node's process.nextTick and setImmediate queues, plus one-shot fd
// readiness and timers, run by poll() for programs that have no event loop of
// their own, or by a host event loop (a loop_driver, e.g. sluice/asio/attach.h).
#pragma once

#include <poll.h>

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include "sluice/base/function.h"

namespace sluice {

using task = inline_function<void(), 32>;
using fd_task = inline_function<void(short revents), 32>;
using timer_id = std::uint64_t;

/// Deferred work for the streams of one thread. Streams never block and never
/// call back from inside write(): what Node defers with process.nextTick goes
/// through next_tick() here, and a sink waiting for a slow fd uses watch().
///
/// A program without an event loop of its own calls run() once:
///
///     auto out = sluice::make_fd_writable(1);
///     out->write("hello\n");
///     out->end();
///     sluice::loop::current().run();  // returns when the streams are done
///
/// A host event loop can drive it instead (attach(), below): the loop keeps
/// the tick and immediate queues and their order, and hands fd readiness,
/// timers and wake-ups from other threads to the host. Streams only ever talk
/// to their loop, so they run unchanged on, say, a Boost.Asio io_context
/// (sluice/asio/attach.h).
///
/// A loop belongs to one thread, like the streams that use it.
class loop;

/// What a host event loop implements to drive a sluice loop (see
/// loop::attach()). The sluice loop calls it from its own thread, except
/// schedule(), which post() calls from any thread.
class loop_driver {
 public:
  /// Call loop::run_turn() soon, from the host loop, after the host's other
  /// ready work (so that a loop that always has immediates cannot starve it).
  virtual void schedule() = 0;
  /// A watch on `fd` for `events` (POLLIN, POLLOUT) was added: when the fd is
  /// ready for them (or in error), call loop::on_ready(fd, revents). Level-
  /// triggered, as poll(): a watch on an fd that is ready already fires.
  virtual void watch(int fd, short events) = 0;
  /// No watch is left on `fd` (cancelled, or loop::forget_fd()): stop
  /// waiting on it and let go of it; it may be closed as soon as this returns.
  virtual void unwatch(int fd) noexcept = 0;
  /// Call loop::on_timer() at `due`, or earlier. Each call is for an earlier
  /// time than the last one still pending.
  virtual void arm_timer(std::chrono::steady_clock::time_point due) = 0;
  /// Keep the host running while held (loop::hold()), though nothing else is
  /// pending: work will come through post().
  virtual void hold(bool held) = 0;
  /// loop::run() on an attached loop: run the host until `l` is not alive().
  virtual void run(loop& l) = 0;
  /// The loop goes (its destructor) or attaches another driver: forget it.
  virtual void detached() noexcept = 0;

 protected:
  ~loop_driver() = default;
};

class loop {
 public:
  loop();
  ~loop();
  loop(const loop&) = delete;
  loop& operator=(const loop&) = delete;

  /// This thread's default loop, made on first use.
  static loop& current();

  /// Node: process.nextTick(). Runs before anything else that is deferred;
  /// ticks queued by ticks run in the same drain, up to tick_budget ticks
  /// and microtasks a drain. `owner` tags the task so that cancel(owner) can
  /// drop it when its object goes away.
  void next_tick(task t, const void* owner = nullptr);
  /// The most ticks and microtasks one drain runs. Differs from Node, whose
  /// drain goes on while ticks queue ticks: past this many, the rest wait
  /// until the loop has run its due timers, looked at its fds and posts
  /// (without waiting) and run a turn of immediates, so that a chain of
  /// ticks that never ends (a pipeline from an always-ready source through
  /// stages that all complete at once) cannot starve them. The ticks keep
  /// their order.
  static constexpr std::size_t tick_budget = 16 * 1024;
  /// Node: queueMicrotask(), and the jobs of settled promises: runs once
  /// the ticks queued so far have run, before the ticks that microtasks
  /// queue (Node's processTicksAndRejections(): the tick queue, then the
  /// microtasks, again while either has work). For code that mirrors Node's
  /// `await`, such as the iterator helpers.
  void queue_microtask(task t, const void* owner = nullptr);
  /// Runs the microtasks queued so far and those they queue, not the ticks:
  /// what follows JavaScript that itself runs as a microtask (a promise's
  /// continuation), whose microtasks come before its ticks.
  void run_microtasks();
  /// Node: setImmediate(). Runs in the next turn, after the ticks.
  void set_immediate(task t, const void* owner = nullptr);
  /// Calls `t` once, from run(), when `fd` is ready for `events` (POLLIN,
  /// POLLOUT) or in error; revents says which. Level-triggered, as poll().
  /// Before closing a watched fd, call cancel(owner), then forget_fd(fd):
  /// a host loop may keep the fd registered until then.
  void watch(int fd, short events, fd_task t, const void* owner = nullptr);
  /// Node: setTimeout(). Calls `t` once, from run(), after `delay`; a zero
  /// delay waits for the next turn. Returns an id for clear_timeout().
  timer_id set_timeout(std::chrono::milliseconds delay, task t, const void* owner = nullptr);
  /// Node: clearTimeout(). Unknown or fired ids are ignored.
  void clear_timeout(timer_id id) noexcept;

  /// The one call that may come from any thread: queues `t` to run on this
  /// loop's thread, as a tick, and wakes the loop if it is waiting in run().
  /// Used by worker threads to hand completions back.
  void post(task t);

  /// Drops every task, timer and watch queued with this owner (O(queued)).
  void cancel(const void* owner) noexcept;
  /// `fd` was watched and is about to be closed (its watches are done or
  /// cancelled): a driver that keeps fds registered from one watch to the
  /// next (the Asio engine) lets go of it now, while the number is still
  /// this file's. After the close, the number may be another file's, even
  /// one another thread opens or one registered on the same io_context:
  /// the driver must never touch it then. A no-op while watches remain.
  void forget_fd(int fd) noexcept;

  /// libuv's uv_unref() (Node's server.unref(), socket.unref()): the watches
  /// and timers of `owner`, queued now or later, no longer keep run() (or
  /// alive()) going; they still fire while something else does. Its ticks
  /// and immediates still run. ref() undoes it; both are idempotent.
  /// Costs nothing while no owner is unref'd; each check is then
  /// O(watches + timers) times the owners unref'd (a handful).
  void unref(const void* owner);
  void ref(const void* owner) noexcept;
  bool has_ref(const void* owner) const noexcept;

  /// Runs ticks and immediates until none are left. Does not wait for fds.
  void run_until_idle();
  /// One turn of run(), its wait for fds, timers and posts at most
  /// `max_wait` (none while immediates or ticks are queued): libuv's
  /// UV_RUN_ONCE with a bound, for a program (or a test) that does its own
  /// work between turns. False, at once, when nothing is left that run()
  /// would wait for. Not on an attached loop: its host runs the turns.
  bool run_once(std::chrono::milliseconds max_wait);
  /// Runs until nothing at all is left: no ticks, no immediates, no watches;
  /// waits in poll() while only watches remain. Each turn looks at the fds
  /// (without waiting) even while immediates keep coming, as libuv does.
  /// On an attached loop, runs the host loop (the driver's run()) instead.
  void run();
  /// Whether anything is queued, watched, timed, or expected from another
  /// thread (see hold()).
  bool alive() const noexcept;

  /// Keeps run() from returning while work is expected through post() (a
  /// worker thread with writes in flight); release() when none is. Counted.
  void hold();
  void release() noexcept {
    if (--holds_ == 0 && driver_) driver_->hold(false);
  }

  /// A step that must run before this loop goes, for an object that holds the
  /// loop and has work to settle (sluice's streams write what they hold: see
  /// stream/detail/shutdown.h). Intrusive: the owner embeds it, so adding one
  /// allocates nothing. The destructor unlinks each hook, oldest first, and
  /// calls fn(hook, loop); fn may add the hook to another loop.
  struct close_hook {
    void (*fn)(close_hook& hook, loop& l) noexcept = nullptr;
    void* owner = nullptr;
    loop* home = nullptr;  // the loop whose list holds it, or null
    close_hook* prev = nullptr;
    close_hook* next = nullptr;
  };
  void add_close_hook(close_hook& hook) noexcept;
  /// Unlinks `hook` if it is linked here; a no-op otherwise.
  void remove_close_hook(close_hook& hook) noexcept;

  /// Hands this loop to a host event loop: from now on `d` waits for the
  /// fds, timers and posts, and calls run_turn(), on_ready() and on_timer();
  /// run() runs the host. Work already queued is handed over at once. A null
  /// `d` detaches: run() polls again. The driver must outlive the
  /// attachment; the loop tells it detached() when it goes.
  void attach(loop_driver* d);
  loop_driver* driver() const noexcept { return driver_; }

  /// For a driver. One turn: posted tasks and ticks, the timers that are
  /// due, then the immediates queued before the turn (each followed by its
  /// ticks), as one iteration of run(). Asks for another turn if
  /// immediates remain.
  void run_turn();
  /// For a driver: `fd` is ready (revents as poll() gives it). Runs the
  /// watches on it that revents satisfies, then the ticks they queued.
  void on_ready(int fd, short revents);
  /// For a driver: the timer armed by arm_timer() expired. Runs the due
  /// timers (each followed by its ticks) and arms the next.
  void on_timer();
  /// The events still watched on `fd` (POLLIN | POLLOUT), 0 if none.
  short watched_events(int fd) const noexcept;


  /// One buffer for the reads of this loop's sources that keep nothing
  /// between reads (libuv's alloc_cb lets a server hand every connection the
  /// same one): a source reads into it, pushes what it read, and gives it
  /// back before it returns; the readable copies only what it buffers. So a
  /// quiet connection holds no read buffer. Made on first use. Null while it
  /// is lent (a 'data' listener that makes another source read in place):
  /// the caller then reads into a buffer of its own.
  static constexpr std::size_t shared_read_size = 64 * 1024;
  char* borrow_read_buffer() noexcept;
  void return_read_buffer() noexcept { read_buffer_lent_ = false; }

 private:
  struct queued {
    const void* owner;
    task fn;
  };
  // A ring buffer that grows by doubling and never shrinks: after warm-up,
  // queueing a task allocates nothing.
  class ring {
   public:
    void push(queued q);
    queued pop();
    bool empty() const noexcept { return count_ == 0; }
    std::size_t size() const noexcept { return count_; }
    void cancel(const void* owner) noexcept;

   private:
    std::vector<queued> slots_;
    std::size_t head_ = 0;
    std::size_t count_ = 0;
  };
  // A watch lives in a slot of watches_ that stays put until it fires or is
  // cancelled, so the pollfd that poll() hands back and the fd's list both
  // lead to it in O(1): no search of every watch per ready fd.
  static constexpr std::uint32_t no_slot = UINT32_MAX;
  struct watch_entry {
    int fd;
    short events;
    std::uint64_t seq;  // 0 while the slot is free; a reused slot gets a new one
    const void* owner;
    fd_task fn;
    std::uint32_t prev_on_fd;  // the fd's watches, oldest first; or the free list's next
    std::uint32_t next_on_fd;
    std::uint32_t poll_index;  // its entry in pollfds_
  };
  struct fd_watches {
    std::uint32_t head = no_slot;  // oldest
    std::uint32_t tail = no_slot;
  };
  // A pollfd that poll() reported, and which watch it was for when it did.
  struct ready_watch {
    std::uint64_t seq;
    std::uint32_t slot;
    short revents;
  };

  struct timer_entry {
    std::chrono::steady_clock::time_point due;
    timer_id id;
    const void* owner;
    task fn;
  };

  void drain_ticks();
  void drain_posted();
  void run_immediates();
  void run_timers();
  void request_turn();
  void dispatch(int fd, short revents);
  // Unlinks the watch in `slot` (its task moved out or to be dropped) and
  // frees the slot.
  void remove_watch(std::uint32_t slot) noexcept;
  // The oldest watch on `fd` that `revents` satisfies and that is not newer
  // than `last`, or no_slot.
  std::uint32_t first_ready(int fd, short revents, std::uint64_t last) const noexcept;
  void after_callbacks();
  bool poll_watches(int timeout_ms);
  bool run_turn_polling(int max_wait_ms);
  int next_timeout_ms() const;
  // Whether a watch or timer keeps run() going (one not unref'd).
  bool referenced_waits() const noexcept;

  close_hook* close_head_ = nullptr;  // oldest first
  close_hook* close_tail_ = nullptr;

  ring ticks_;
  ring microtasks_;
  ring immediates_;
  std::vector<watch_entry> watches_;  // slots, live and free
  std::uint32_t free_slots_ = no_slot;  // chained through next_on_fd
  std::size_t watch_count_ = 0;  // live watches
  std::vector<fd_watches> by_fd_;  // by fd number
  // One pollfd per watch (poll() takes an fd twice), kept between polls, in
  // no order: a removal moves the last one into its place.
  std::vector<pollfd> pollfds_;
  std::vector<std::uint32_t> poll_slots_;  // the watch of each pollfd
  std::vector<ready_watch> ready_;  // reused by poll_watches()
  std::vector<timer_entry> timers_;  // a min-heap on (due, id)
  timer_id next_timer_ = 1;
  loop_driver* driver_ = nullptr;
  bool turn_requested_ = false;  // a driver's run_turn() is on its way
  // The earliest time the driver's timer is armed for (max: not armed).
  std::chrono::steady_clock::time_point timer_armed_ = std::chrono::steady_clock::time_point::max();
  std::uint64_t watch_seq_ = 0;  // numbers watches, so a dispatch skips the ones it added
  int running_ = 0;
  bool microtasks_first_ = false;  // the last drain stopped among the microtasks
  std::size_t holds_ = 0;
  std::vector<const void*> unrefd_;  // owners whose waits do not count (unref())

  // post(): the only state shared across threads. The eventfd is made by the
  // first post or hold(), or before run() first waits in poll() (a post made
  // once the wait began could not wake it otherwise), so a loop that never
  // waits nor hears from another thread has none.
  std::mutex posted_mutex_;
  std::vector<task> posted_;
  std::vector<task> posted_swap_;  // reused, so draining allocates nothing
  std::atomic<int> wake_fd_{-1};
  std::unique_ptr<char[]> read_buffer_;  // see borrow_read_buffer()
  bool read_buffer_lent_ = false;
  void make_wake_fd();  // with posted_mutex_ held
};

}  // namespace sluice
