// worker_sink: a producer's side of the hand-over to a file_worker (the
// protocol is in worker_protocol.h).
#include "sluice/sinks/worker_sink.h"

#include <cassert>
#include <cerrno>
#include <new>
#include <system_error>

#include "sluice/loop/loop.h"
#include "sluice/sinks/detail/worker_protocol.h"

namespace sluice {

worker_sink::worker_sink(std::shared_ptr<detail::worker_core> core)
    : sink({.writev = true, .coalesce = true}, this), core_(std::move(core)), slot_(new detail::worker_slot) {}

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

std::size_t worker_sink::landed_sync() const noexcept { return slot_->landed; }

std::uint64_t worker_sink::position() const noexcept { return slot_->completed_position; }

// The loop's first hold() makes the eventfd that the worker's completions
// come through: made here, as the stream is built, so that a process that
// later runs out of fds (a server's connections) still hears its writes
// complete. If it cannot be made now, the first write reports why.
void worker_sink::attach(loop& l) {
  slot_->home = &l;
  try {
    l.hold();
    l.release();
  } catch (const std::exception&) {
  }
}

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
  if (s.held) {
    // The loop's first hold makes its eventfd: with no fd left (EMFILE),
    // that is this write's error, not std::terminate from the writable's
    // noexcept path: a tool out of fds must report it, not abort.
    std::error_code ec;
    try {
      s.home->hold();
    } catch (const std::system_error& e) {
      ec = e.code();
    } catch (const std::bad_alloc&) {
      ec = std::make_error_code(std::errc::not_enough_memory);
    }
    if (ec) {
      s.held = false;
      s.error = ec;
      s.complete();
      return;
    }
  }
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
    s.landed = 0;
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

bool worker_sink::completing() const noexcept { return slot_->completing; }

std::error_code worker_sink::wait_written() noexcept {
  detail::worker_slot& s = *slot_;
  if (!s.in_flight) return {};
  core_->wait_for(s, detail::is_written);
  return s.error;
}

void worker_sink::begin_flush() noexcept { slot_->flushing = true; }

void worker_sink::end_flush() noexcept {
  while (slot_->in_flight) complete_here();
  slot_->flushing = false;
}

}  // namespace sluice
