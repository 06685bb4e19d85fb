// on_loop: a readable's options with its loop (and a high-water mark) given.
#pragma once

#include <cstddef>
#include <optional>

#include "sluice/loop/loop.h"
#include "sluice/stream/readable.h"

namespace sluice::test {

inline readable_options on_loop(loop& l, std::optional<std::size_t> hwm = std::nullopt) {
  readable_options o;
  o.event_loop = &l;
  o.high_water_mark = hwm;
  return o;
}

}  // namespace sluice::test
