// spin: turns a loop until a condition holds, polling its fds itself, with
// a bound on the turns so that a hang fails the test instead of blocking it.
#pragma once

#include <poll.h>

#include <functional>
#include <vector>

#include "sluice/loop/loop.h"
#include "support/time_scale.h"

namespace sluice::test {

/// Turns `l` until `done()` or `turns` turns (each waits at most 5 ms for
/// an fd, or for a timer to come due), times SLUICE_TIME_SCALE (see
/// time_scale.h); returns done().
inline bool spin(loop& l, const std::function<bool()>& done, int turns = 4000) {
  turns *= time_scale();
  for (int i = 0; i < turns; ++i) {
    if (done()) return true;
    l.run_until_idle();
    std::vector<pollfd> fds;
    for (const auto& w : l.watched_fds()) fds.push_back({w.fd, w.events, 0});
    if (::poll(fds.data(), fds.size(), 5) > 0)
      for (const auto& p : fds)
        if (p.revents) l.dispatch_ready(p.fd, p.revents);
    l.run_until_idle();
  }
  return done();
}

}  // namespace sluice::test
