// turn(loop): one turn of a loop with fd readiness (loop::run_once()), its
// ready work run before and after, without waiting for ever on a watch as
// run() would.
#pragma once

#include <chrono>

#include "sluice/loop/loop.h"

namespace sluice::test {

inline void turn(loop& l, int timeout_ms = 0) {
  l.run_until_idle();
  l.run_once(std::chrono::milliseconds(timeout_ms));
  l.run_until_idle();
}

}  // namespace sluice::test
