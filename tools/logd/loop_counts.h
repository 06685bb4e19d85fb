// sluice-logd's counts of one event loop (--threads runs several): each is
// added to by its loop's thread only, and read by any (the main loop's
// --metrics and --stats sum them).
#pragma once

#include <atomic>
#include <cstddef>

namespace sluice_tools {

// A count with one writer and any number of readers. One thread adds, so a
// relaxed load and store do (a plain load and store on x86 and ARM, no
// locked read-modify-write): --threads 1 pays what a size_t costs, and a
// reader on another thread sees a value the count had, never a torn one.
class loop_counter {
 public:
  loop_counter& operator++() noexcept { return *this += 1; }
  loop_counter& operator--() noexcept {
    v_.store(v_.load(std::memory_order_relaxed) - 1, std::memory_order_relaxed);
    return *this;
  }
  loop_counter& operator+=(std::size_t n) noexcept {
    v_.store(v_.load(std::memory_order_relaxed) + n, std::memory_order_relaxed);
    return *this;
  }
  loop_counter& operator=(std::size_t n) noexcept {
    v_.store(n, std::memory_order_relaxed);
    return *this;
  }
  operator std::size_t() const noexcept { return v_.load(std::memory_order_relaxed); }
  std::size_t get() const noexcept { return *this; }

 private:
  std::atomic<std::size_t> v_{0};
};

// What one loop counts. messages: read and handed to FILE's stream;
// written: of those, the ones whose write succeeded. The gauges (open,
// waiting, refused) of a loop other than the main one are its last
// snapshot: the main loop reads its own live.
struct loop_counts {
  loop_counter messages, bytes, written, connections, malformed;
  loop_counter truncated, idle_closed, accept_errors;
  loop_counter answered;     // RELP messages answered 200
  loop_counter tls_refused;  // --listen-tls handshakes that failed
  loop_counter open, waiting, refused;
};

}  // namespace sluice_tools
