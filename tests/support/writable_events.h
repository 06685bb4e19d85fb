// events, on: what a writable emitted, and options that put it on a loop.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <system_error>
#include <thread>
#include <vector>

#include "sluice/base/errors.h"
#include "sluice/loop/loop.h"
#include "sluice/stream/writable.h"

namespace sluice::test {

/// The events a writable emits ('error', 'finish', 'close', 'drain'), in
/// order, and whether any came on another thread than the one that
/// attached (a worker stream must emit on its own loop's thread).
struct events {
  std::vector<std::string> seen;
  bool off_thread = false;
  void attach(writable& w) {
    const auto me = std::this_thread::get_id();
    auto add = [this, me](std::string what) {
      if (std::this_thread::get_id() != me) off_thread = true;
      seen.push_back(std::move(what));
    };
    w.on(event::error, [add](std::error_code ec) { add("error " + code_name(ec)); });
    w.on(event::finish, [add] { add("finish"); });
    w.on(event::close, [add] { add("close"); });
    w.on(event::drain, [add] { add("drain"); });
  }
  /// "error ENOSPC; close"
  std::string str() const {
    std::string s;
    for (const auto& e : seen) s += (s.empty() ? "" : "; ") + e;
    return s;
  }
};

/// A writable's options with its loop (and a high-water mark) given.
inline writable_options on(loop& l, std::optional<std::size_t> high_water_mark = std::nullopt) {
  writable_options o;
  o.event_loop = &l;
  o.high_water_mark = high_water_mark;
  return o;
}

}  // namespace sluice::test
