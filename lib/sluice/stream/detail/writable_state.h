// writable_state: Node's WritableState. One flag word plus counters; the
// behaviour lives in writable.cc. Bits keep Node's names so the two files can
// be read side by side.
#pragma once

#include <cstddef>
#include <cstdint>
#include <limits>

#include "sluice/stream/detail/stream_state.h"

namespace sluice::detail {

namespace wflag {
enum : std::uint32_t {
  // The bits both sides have (see stream_state.h).
  object_mode = sflag::object_mode,
  error_emitted = sflag::error_emitted,
  auto_destroy = sflag::auto_destroy,
  emit_close = sflag::emit_close,
  destroyed = sflag::destroyed,
  closed = sflag::closed,
  close_emitted = sflag::close_emitted,
  errored = sflag::errored,
  constructed = sflag::constructed,
  // The writable's own.
  sync = 1u << 9,           // inside a sink call: its completion is synchronous
  final_called = 1u << 10,  // the sink's final was called (or there is none)
  need_drain = 1u << 11,    // write() returned false; 'drain' is owed
  ending = 1u << 12,        // end() was called (Node's writableEnded)
  finished = 1u << 13,      // 'finish' was emitted
  writing = 1u << 14,       // a sink write or writev is in flight
  buffer_processing = 1u << 15,  // clear_buffer() is running
  prefinished = 1u << 16,   // 'prefinish' emitted
  all_noop = 1u << 17,      // no buffered request has a callback
  on_finished = 1u << 18,   // end() callbacks are waiting
  corked = 1u << 19,        // corked > 0
  expect_write_cb = 1u << 20,     // a sink call may complete; a second completion is an error
  after_write_pending = 1u << 21, // a deferred after_write is queued
  buffered = 1u << 22,      // the buffered queue is in use (Node: state.buffered non-empty)
  ended = 1u << 23,         // end() has returned
  // sluice's own: writes wait for the end of the turn, so that a turn's writes
  // reach the sink as one writev. Set only for sinks that ask for it.
  coalescing = 1u << 24,
  flush_scheduled = 1u << 25,  // the end-of-turn flush is queued
  writecb = 1u << 26,  // the sink call in flight has a callback to call (Node: writecb !== nop)
  not_writable = 1u << 27,  // a duplex made with writable = false (Node: state.writable === false)
  // sluice's own: max_buffered is set (fixed at construction). With ending
  // and destroyed, the one flag test that keeps write()'s fast path.
  capped = 1u << 28,
};
static_assert(std::uint32_t{sync} == std::uint32_t{sflag::first_side_bit});
}  // namespace wflag

// `length` counts bytes (or writes, in object mode) not yet completed.
struct writable_state : stream_state {
  writable_state() noexcept { set(wflag::sync | wflag::all_noop); }

  std::uint32_t corked = 0;    // nesting depth of cork()
  std::size_t pending_cb = 0;  // callbacks and finish steps still owed (Node: pendingcb)
  std::size_t write_len = 0;   // length of the request in flight (Node: writelen)
  // sluice's own hard cap (writable_options::max_buffered): `length` never
  // goes past it; the writes refused for it, counted.
  std::size_t max_buffered = std::numeric_limits<std::size_t>::max();
  std::size_t refused_writes = 0;
};

}  // namespace sluice::detail
