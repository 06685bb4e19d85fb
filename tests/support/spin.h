// spin: turns a loop until a condition holds, with a bound on the turns so that a hang fails the test instead of blocking it.
#pragma once

#include <chrono>
#include <functional>
#include <thread>

#include "sluice/loop/loop.h"
#include "support/time_scale.h"

namespace sluice::test {

/// Turns `l` until `done()` or `turns` turns (each waits at most 5 ms for
/// an fd, a post, or a timer to come due), times SLUICE_TIME_SCALE (see
/// time_scale.h); returns done().
inline bool spin(loop& l, const std::function<bool()>& done, int turns = 4000) {
  turns *= time_scale();
  for (int i = 0; i < turns; ++i) {
    if (done()) return true;
    l.run_until_idle();
    // Nothing the loop waits for: what comes, comes from elsewhere (a
    // thread, a child process); the turn still takes its 5 ms.
    if (!l.run_once(std::chrono::milliseconds(5))) std::this_thread::sleep_for(std::chrono::milliseconds(5));
    l.run_until_idle();
  }
  return done();
}

}  // namespace sluice::test
