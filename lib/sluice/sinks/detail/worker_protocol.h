// worker_protocol: the lock-free hand-over between producers and the one
// thread of a file_worker. Producers push a slot (one sink call, a
// "round"); the worker takes every pushed slot at once, writes them, and
// ends each round by posting its completion to the producer's loop, unless
// the producer claimed the round to complete it itself. Used by
// worker_sink (the producer side) and file_worker (the worker side).
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
//            bit 3 reopen    a log_worker: request_reopen() was called (set
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
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>
#include <system_error>
#ifdef __linux__
#include <sched.h>
#endif

#include "sluice/sinks/sink.h"

namespace sluice::detail {

// `word`'s bits.
inline constexpr std::uint32_t sleeping = 1u << 0;
inline constexpr std::uint32_t stopping = 1u << 1;
inline constexpr std::uint32_t waiters = 1u << 2;
inline constexpr std::uint32_t reopen_asked = 1u << 3;
inline constexpr std::uint32_t epoch_unit = 1u << 8;

// A slot's `state` bits.
inline constexpr std::uint32_t holds_mask = 0xff;
inline constexpr std::uint32_t written = 1u << 8;
inline constexpr std::uint32_t claimed = 1u << 9;

// How long a thread polls before it sleeps: about what sleeping and being
// woken costs (a futex wait and wake, a context switch: 10-20 us on a VM),
// so that spinning never costs more than twice the best choice. A producer
// in flush_sync waits for one batch, which a running worker writes within
// microseconds. The worker spins less: the next batch of a flush_sync loop
// follows within a microsecond, and a worker spinning in vain takes a core
// the producers may need (a preempted spinner also waits longer for the CPU
// than a woken sleeper does).
inline constexpr auto producer_spin = std::chrono::microseconds(20);
inline constexpr auto worker_spin = std::chrono::microseconds(10);

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
// for a whole time slice, milliseconds a wait. The protocol spins on its own.
void sleep_on(std::atomic<std::uint32_t>& word, std::uint32_t old) noexcept;
// sleep_on() for at most `timeout` (a log worker's every_ms sync). C++20 has
// no timed atomic wait: elsewhere than on Linux it sleeps untimed, and the
// idle sync waits for the next batch or close().
void sleep_on_for(std::atomic<std::uint32_t>& word, std::uint32_t old, std::chrono::nanoseconds timeout) noexcept;
void wake(std::atomic<std::uint32_t>& word, bool all) noexcept;

// The CPU this thread runs on, or -1 when unknown. Spinning for a thread
// that last ran on this very CPU is pointless: it cannot run while we spin.
// (The scheduler likes to put two threads that wake each other on one CPU
// when the others are busy; there, spinning made each round trip cost the
// whole spin budget.)
inline int current_cpu() noexcept {
#ifdef __linux__
  return ::sched_getcpu();
#else
  return -1;
#endif
}

inline bool same_cpu(int a, int b) noexcept { return a >= 0 && a == b; }

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

inline bool is_written(std::uint32_t st) noexcept { return (st & written) != 0; }
inline bool is_let_go(std::uint32_t st) noexcept { return (st & holds_mask) == 0; }

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
  // Written by the worker before it sets `written`: the round's error, and
  // the chunks written whole before it (see write_done).
  std::error_code error;
  std::size_t landed = 0;
  // The worker's byte count (file_worker::bytes_written()) once the round
  // was written: every byte of the round lies below it.
  std::uint64_t position = 0;

  // The producer's own, touched from its thread only.
  // `position` of the round being completed, copied by complete() before
  // its callbacks: while they run, the stream may already have handed the
  // worker the next round, whose `position` the worker then writes.
  std::uint64_t completed_position = 0;
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

// The state both sides share, per worker. file_worker's thread state
// derives from it; each worker_sink holds it, so that it outlives the
// worker while sinks remain.
struct worker_core {
  // What both sides touch on every round, on a cache line of its own.
  alignas(64) std::atomic<worker_slot*> head{nullptr};
  std::atomic<std::uint32_t> word{0};
  std::atomic<int> worker_cpu{-1};  // where the worker last ran (a hint)
  alignas(64) int producer_cpu = -1;  // the worker's: where the last batch came from

  static worker_slot* closed() noexcept { return reinterpret_cast<worker_slot*>(std::uintptr_t{1}); }

  // ---- producer side

  // Hands a slot to the worker; false once the worker has shut down.
  bool push(worker_slot& s) noexcept {
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
  void wait_for(worker_slot& s, Pred done) noexcept {
    if (!same_cpu(current_cpu(), worker_cpu.load(std::memory_order_relaxed)) &&
        spin_until([&] { return done(s.state.load(std::memory_order_acquire)); }, producer_spin))
      return;
    for (;;) {
      const std::uint32_t w = word.fetch_or(waiters, std::memory_order_seq_cst) | waiters;
      if (done(s.state.load(std::memory_order_seq_cst))) return;
      sleep_on(word, w);
    }
  }

  // ---- worker side

  // Every slot pushed since the last call, in handing order (linked by
  // `next`); null when there is none.
  worker_slot* take() noexcept {
    worker_slot* taken = head.exchange(nullptr, std::memory_order_acquire);
    worker_slot* fifo = nullptr;  // the stack is newest first
    while (taken) {
      worker_slot* n = taken->next;
      taken->next = fifo;
      fifo = taken;
      taken = n;
    }
    return fifo;
  }

  // Spins, then sleeps until a slot is pushed (or a reopen is asked for).
  // `sleep(w)` sleeps on `word` while it holds `w`, and returns false to get
  // up anyway (a log's sync that is due). False when told to stop and
  // nothing is left; `head` is then closed to further pushes.
  template <class Sleep>
  bool wait_for_work(Sleep sleep) noexcept {
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
      if (!sleep(w)) break;
    }
    word.fetch_and(~sleeping, std::memory_order_relaxed);
    return true;
  }

  // Before the worker writes a round.
  void begin_round(const worker_slot& s) noexcept {
    producer_cpu = s.cpu;
    if (const int cpu = current_cpu(); worker_cpu.load(std::memory_order_relaxed) != cpu)
      worker_cpu.store(cpu, std::memory_order_relaxed);
  }
  // After the worker wrote a round and stored its error: posts the
  // completion unless the round is claimed, lets go of the slot, and wakes
  // the producers that wait. After it the slot is the producer's again.
  void end_round(worker_slot& s) noexcept;

  // close(): the worker writes what is pushed, then returns from
  // wait_for_work() with false.
  void stop() noexcept;
};

}  // namespace sluice::detail
