// default_high_water_mark: Node v20's stream.getDefaultHighWaterMark() and
// stream.setDefaultHighWaterMark() (lib/internal/streams/state.js).
#pragma once

#include <cstddef>

namespace sluice {

/// Node: getDefaultHighWaterMark(objectMode). The high-water mark that a
/// readable, writable, duplex or transform gets when its options leave it
/// unset: Node v20's 16384 bytes, or 16 chunks in object mode, until
/// set_default_high_water_mark() changes it.
///
///     sluice::set_default_high_water_mark(false, 64 * 1024);  // Node 22's default
///     sluice::writable w(std::move(sink));  // w.writable_high_water_mark() == 65536
std::size_t get_default_high_water_mark(bool object_mode) noexcept;

/// Node: setDefaultHighWaterMark(objectMode, value). Changes the default for
/// the streams made afterwards (streams already made keep theirs). One
/// default per process, as Node has one per isolate; the value is read and
/// written atomically, so streams of other threads see it from their next
/// construction on. 0 is valid, as in Node.
void set_default_high_water_mark(bool object_mode, std::size_t n) noexcept;

}  // namespace sluice
