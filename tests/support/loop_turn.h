// turn(loop): one turn of a loop with fd readiness, as a host event loop
// would drive it (run_until_idle, poll the watched fds, dispatch), without
// waiting for ever on a watch as run() would.
#pragma once

#include <poll.h>

#include <vector>

#include "sluice/loop/loop.h"

namespace sluice::test {

inline void turn(loop& l, int timeout_ms = 0) {
  l.run_until_idle();
  std::vector<pollfd> fds;
  for (const auto& w : l.watched_fds()) fds.push_back({w.fd, w.events, 0});
  if (!fds.empty() && ::poll(fds.data(), fds.size(), timeout_ms) > 0)
    for (const auto& p : fds)
      if (p.revents) l.dispatch_ready(p.fd, p.revents);
  l.run_until_idle();
}

}  // namespace sluice::test
