// time_scale: how much slower than a quiet machine the tests may run, from
// SLUICE_TIME_SCALE (a whole number, default 1; .ci/run sets 3 for its
// sanitizer stages, where everything is 2-3x slower and shares 2 cores).
// Every bound on a wait (turns of spin(), a deadline) is multiplied by it,
// so that a slow run waits longer for the event instead of failing. It
// never shortens anything, and no test asserts that something is fast.
#pragma once

#include <cstdlib>

namespace sluice::test {

inline int time_scale() {
  static const int scale = [] {
    const char* s = std::getenv("SLUICE_TIME_SCALE");
    const int v = s ? std::atoi(s) : 1;
    return v < 1 ? 1 : v > 100 ? 100 : v;
  }();
  return scale;
}

}  // namespace sluice::test
