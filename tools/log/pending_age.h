// How long sluice-log's oldest unsettled line has waited, for --metrics:
// read and handed to the stream, its write's callback not come yet (for
// relp://, not acknowledged; syslog://, not in the kernel; kafka://, not
// delivered; with --spool, not in the spool; a FILE, not written).
//
// A writable calls its writes back in the order they were made, so once
// `settled` lines have a callback, the oldest unsettled one is line number
// `settled` (Kafka's delivery reports may come out of order across
// partitions: there it is the age of the line after as many as settled).
// Its time comes from a mark, (a line's number, the time it came), taken
// for the first line after the last mark is 10 ms old: so a line costs one
// test of a flag, the clock is read at most 100 times a second while lines
// come (and the timer that clears the flag is armed as often, never while
// none come), and the age is at most 10 ms over. The marks of settled lines
// are dropped as new ones are taken.
#pragma once

#include <time.h>

#include <chrono>
#include <cstdint>
#include <deque>

#include "sluice/loop/loop.h"

namespace sluice_tools {

class pending_age {
 public:
  pending_age() = default;
  pending_age(const pending_age&) = delete;
  pending_age& operator=(const pending_age&) = delete;
  ~pending_age() {
    if (loop_) loop_->cancel(this);
  }

  /// Starts the marks (with --metrics; without, added() is a test of a
  /// flag). Its timer never keeps `loop` running.
  void enable(sluice::loop& loop) {
    loop_ = &loop;
    loop.unref(this);
    skip_ = false;
  }

  /// Line `n` (the count of lines before it) is handed to the stream, when
  /// `settled` lines have their callback.
  void added(std::uint64_t n, std::uint64_t settled) {
    if (skip_) return;
    skip_ = true;
    while (marks_.size() > 1 && marks_[1].line <= settled) marks_.pop_front();
    marks_.push_back({n, now_ns()});
    loop_->set_timeout(std::chrono::milliseconds(10), [this] { skip_ = false; }, this);
  }

  /// Seconds since line `settled` was handed, 0 when all `lines` settled.
  double oldest_seconds(std::uint64_t settled, std::uint64_t lines) const {
    if (settled >= lines || marks_.empty()) return 0;
    std::size_t i = 0;
    while (i + 1 < marks_.size() && marks_[i + 1].line <= settled) ++i;
    return static_cast<double>(now_ns() - marks_[i].ns) / 1e9;
  }

 private:
  struct mark {
    std::uint64_t line;
    std::int64_t ns;
  };

  static std::int64_t now_ns() noexcept {
    timespec ts{};
    ::clock_gettime(CLOCK_MONOTONIC, &ts);
    return static_cast<std::int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
  }

  sluice::loop* loop_ = nullptr;
  bool skip_ = true;  // disabled, or a mark of the last 10 ms covers the line
  std::deque<mark> marks_;
};

}  // namespace sluice_tools
