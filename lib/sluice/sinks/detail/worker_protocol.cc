// The hand-over between producers and a file_worker's thread: see the
// protocol in worker_protocol.h.
#include "sluice/sinks/detail/worker_protocol.h"

#include <unistd.h>
#ifdef __linux__
#include <linux/futex.h>
#include <sys/syscall.h>
#endif

#include <climits>
#include <ctime>

#include "sluice/loop/loop.h"

namespace sluice::detail {

static_assert(sizeof(std::atomic<std::uint32_t>) == 4 && std::atomic<std::uint32_t>::is_always_lock_free);

void sleep_on(std::atomic<std::uint32_t>& word, std::uint32_t old) noexcept {
#ifdef __linux__
  ::syscall(SYS_futex, &word, FUTEX_WAIT_PRIVATE, old, nullptr, nullptr, 0);
#else
  word.wait(old, std::memory_order_relaxed);
#endif
}

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

// ---- producer side

// The completion of the round, on the producer's thread.
void worker_slot::complete() noexcept {
  in_flight = false;
  completed_position = position;
  const write_done d = *done;
  done.reset();
  const bool outer = completing;  // a sink call that failed at once completes inside another
  completing = true;
  d(error, landed);
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

void worker_core::end_round(worker_slot& s) noexcept {
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

void worker_core::stop() noexcept {
  word.fetch_or(stopping, std::memory_order_seq_cst);
  wake(word, true);
}

}  // namespace sluice::detail
