// stream_state: what Node's ReadableState and WritableState have in common.
// Node keeps these bits at the same positions in both flag words (kObjectMode
// ... kConstructed), so that destroy.js reads either side alike; sluice
// defines them once, here, and each side's flag enum takes them from here.
#pragma once

#include <cstddef>
#include <cstdint>

namespace sluice::detail {

namespace sflag {
enum : std::uint32_t {
  object_mode = 1u << 0,    // fixed at construction: length counts chunks, not bytes
  error_emitted = 1u << 1,  // 'error' has been emitted; it never is twice
  auto_destroy = 1u << 2,   // option: destroy() once the side is done, and after an error
  emit_close = 1u << 3,     // option: emit 'close' once destroyed
  destroyed = 1u << 4,      // destroy() was called
  closed = 1u << 5,         // the sink's or source's destroy has run
  close_emitted = 1u << 6,  // set just before 'close' would be emitted
  errored = 1u << 7,        // the side's first error is stored (stream_side::errored_)
  constructed = 1u << 8,    // always set: sluice has no _construct
  // Bits from here up belong to one side (wflag, rflag).
  first_side_bit = 1u << 9,
};
}  // namespace sflag

/// One flag word and the counters both sides keep. A side's state derives
/// from it and adds its own bits and counters.
struct stream_state {
  std::uint32_t flags = sflag::emit_close | sflag::auto_destroy | sflag::constructed;
  // The thread that uses the stream (detail::thread_tag()), 0 until its first
  // call; set and checked only with SLUICE_ASSERTS (SLUICE_ASSERT_THREAD). It
  // sits in the padding after `flags`, so the state is no bigger without it.
  std::uint32_t owner_thread = 0;
  std::size_t length = 0;  // bytes (or chunks, in object mode) held
  std::size_t high_water_mark = 16384;

  bool has(std::uint32_t bits) const noexcept { return (flags & bits) != 0; }
  void set(std::uint32_t bits) noexcept { flags |= bits; }
  void clear(std::uint32_t bits) noexcept { flags &= ~bits; }
};

static_assert(sizeof(stream_state) == 3 * sizeof(std::size_t) || sizeof(std::size_t) < 8,
              "owner_thread must fit in the padding after flags");

}  // namespace sluice::detail
