// A note said at once, then at most once every 10 s with the count of those
// not said since: a flood (EMFILE at every accept retry, a sender of long
// messages, clients that fail their TLS handshake) would otherwise print a
// line each time.
#pragma once

#include <chrono>
#include <cstddef>
#include <string>

namespace sluice_tools {

struct rate_limited_note {
  std::chrono::steady_clock::time_point next{};
  std::size_t unsaid = 0;

  // True when the note is to be said now; `more` is then what to add to it.
  bool due(std::string& more) {
    const auto now = std::chrono::steady_clock::now();
    if (now < next) {
      ++unsaid;
      return false;
    }
    next = now + std::chrono::seconds(10);
    more = unsaid == 0 ? "" : " (and " + std::to_string(unsaid) + " more since the last note)";
    unsaid = 0;
    return true;
  }
};

}  // namespace sluice_tools
