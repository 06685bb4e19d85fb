// How long sluice-log's oldest unsettled line has waited, for --metrics:
// read and handed to the stream, its write's callback not come yet (for
// relp://, not acknowledged; syslog://, not in the kernel; kafka://, not
// delivered; with --spool, not in the spool; a FILE, not written).
//
// A writable calls its writes back in the order they were made, so once
// `settled` lines have a callback, the oldest unsettled one is line number
// `settled` (Kafka's delivery reports may come out of order across
// partitions: there it is the age of the line after as many as settled).
// Its time comes from a mark: (the first line handed in a tick of the
// coarse clock, that tick), one mark a tick at most, the marks of settled
// lines dropped as lines come. So a line costs one read of the coarse
// clock, the age is good to its tick (a few ms), and the marks are bounded
// by the ticks the unsettled lines span.
#pragma once

#include <time.h>

#include <cstdint>
#include <deque>

namespace sluice_tools {

class pending_age {
 public:
  /// Line `n` (the count of lines before it) is handed to the stream, when
  /// `settled` lines have their callback.
  void added(std::uint64_t n, std::uint64_t settled) {
    while (marks_.size() > 1 && marks_[1].line <= settled) marks_.pop_front();
    const std::int64_t t = now_ns();
    if (marks_.empty() || marks_.back().ns != t) marks_.push_back({n, t});
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
    ::clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
    return static_cast<std::int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
  }

  std::deque<mark> marks_;
};

}  // namespace sluice_tools
