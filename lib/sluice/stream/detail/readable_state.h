// readable_state: Node's ReadableState. One flag word plus counters; the
// behaviour lives in readable.cc. Bits keep Node's names and positions
// (kObjectMode = 1 << 0 ... kDataListening = 1 << 27), so the two files can
// be read side by side.
#pragma once

#include <cstddef>
#include <cstdint>

#include "sluice/stream/detail/stream_state.h"

namespace sluice::detail {

namespace rflag {
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
  // The readable's own.
  ended = 1u << 9,           // push_eof() was seen (or read() ran into the end)
  end_emitted = 1u << 10,    // 'end' was emitted (Node's public readableEnded)
  reading = 1u << 11,        // the source's read() was called and has pushed nothing yet
  sync = 1u << 12,           // inside the source's read(); set at first, until the first read()
  need_readable = 1u << 13,  // a read() came back empty: 'readable' is owed when data comes
  emitted_readable = 1u << 14,    // a 'readable' is queued or was just emitted
  readable_listening = 1u << 15,  // there is a 'readable' listener
  resume_scheduled = 1u << 16,    // resume_tick() is queued for the next tick
  multi_await_drain = 1u << 17,   // await_drain holds a set of destinations, not one
  reading_more = 1u << 18,   // maybe_read_more_tick() is queued for the next tick
  data_emitted = 1u << 19,   // 'data' was emitted at least once (Node's readableDidRead)
  // 1 << 20 .. 1 << 22 are Node's encoding bits: sluice has no encodings.
  has_flowing = 1u << 23,    // flowing is true or false, not null
  flowing = 1u << 24,        // flowing mode: 'data' events drain the buffer
  has_paused = 1u << 25,     // pause() or resume() has been called
  paused = 1u << 26,         // the last of them was pause()
  data_listening = 1u << 27, // there is a 'data' listener
  not_readable = 1u << 28,   // a duplex made with readable = false (Node: state.readable === false)
};
static_assert(std::uint32_t{ended} == std::uint32_t{sflag::first_side_bit});
}  // namespace rflag

// `length` counts bytes (or chunks, in object mode) buffered and unread.
struct readable_state : stream_state {
  readable_state() noexcept { set(rflag::sync); }
};

}  // namespace sluice::detail
