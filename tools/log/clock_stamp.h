// sluice-log --timestamp's stamp.
#pragma once

#include <time.h>

#include <cstddef>
#include <ctime>
#include <string_view>

namespace sluice_tools {

// "2026-11-30T00:00:00.123456Z ": the date and time are formatted once a
// second, the microseconds for every line.
class clock_stamp {
 public:
  // The stamp of now: the part to the second, and the microseconds.
  std::string_view seconds(long& usec) {
    timespec ts{};
    ::clock_gettime(CLOCK_REALTIME, &ts);
    usec = ts.tv_nsec / 1000;
    if (ts.tv_sec != last_) {
      last_ = ts.tv_sec;
      tm t{};
      ::gmtime_r(&ts.tv_sec, &t);
      len_ = std::strftime(buf_, sizeof buf_, "%Y-%m-%dT%H:%M:%S", &t);
    }
    return {buf_, len_};
  }

 private:
  time_t last_ = -1;
  char buf_[32] = {};
  std::size_t len_ = 0;
};

}  // namespace sluice_tools
