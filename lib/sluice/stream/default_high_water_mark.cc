#include "sluice/stream/default_high_water_mark.h"

#include <atomic>

namespace sluice {

namespace {
// Node v20's defaults (later releases made the byte default 64 KiB).
std::atomic<std::size_t> default_bytes{16384};
std::atomic<std::size_t> default_objects{16};
}  // namespace

std::size_t get_default_high_water_mark(bool object_mode) noexcept {
  return (object_mode ? default_objects : default_bytes).load(std::memory_order_relaxed);
}

void set_default_high_water_mark(bool object_mode, std::size_t n) noexcept {
  (object_mode ? default_objects : default_bytes).store(n, std::memory_order_relaxed);
}

}  // namespace sluice
