// readable_events: what a readable emitted, its chunks apart from its events.
#pragma once

#include <string>
#include <string_view>
#include <system_error>
#include <vector>

#include "sluice/stream/readable.h"

namespace sluice::test {

/// The chunks a readable gave in 'data', and its other events in order:
/// "end", "error MESSAGE", "close".
struct readable_events {
  std::vector<std::string> chunks;
  std::vector<std::string> events;
  void attach(readable& r) {
    r.on(event::data, [this](std::string_view chunk) { chunks.emplace_back(chunk); });
    r.on(event::end, [this] { events.emplace_back("end"); });
    r.on(event::error, [this](std::error_code ec) { events.push_back("error " + ec.message()); });
    r.on(event::close, [this] { events.emplace_back("close"); });
  }
};

}  // namespace sluice::test
