#include "verify.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <iterator>
#include <string_view>
#include <vector>

#include <fmt/format.h>

#include "lines.h"

namespace log_bench {

namespace {

// The expected content, chunk by chunk.
struct expected_lines {
  explicit expected_lines(std::uint64_t count) : n(count) {}
  std::uint64_t n, i = 0;
  fmt::memory_buffer buf;
  // The next up-to-`lines` lines; empty at the end.
  std::string_view next(std::uint64_t lines) {
    buf.clear();
    const std::uint64_t end = std::min(n, i + lines);
    for (; i < end; ++i) {
      const line l = make_line(i);
      fmt::format_to(std::back_inserter(buf), LINE_BODY "\n", LINE_ARGS(l));
    }
    return {buf.data(), buf.size()};
  }
};

// Reads exactly `want` bytes (fewer only at EOF).
std::size_t read_full(int fd, char* p, std::size_t want) {
  std::size_t got = 0;
  while (got < want) {
    const ssize_t r = ::read(fd, p + got, want - got);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) break;
    got += static_cast<std::size_t>(r);
  }
  return got;
}

}  // namespace

std::uint64_t expected_size(std::uint64_t n) {
  expected_lines e(n);
  std::uint64_t total = 0;
  for (auto s = e.next(65536); !s.empty(); s = e.next(65536)) total += s.size();
  return total;
}

std::string verify(const char* path, std::uint64_t n, std::uint64_t want_bytes) {
  const int fd = ::open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return fmt::format("cannot open: {}", std::strerror(errno));
  struct stat st{};
  ::fstat(fd, &st);
  expected_lines e(n);
  std::vector<char> got(8192 * 128);
  std::uint64_t newlines = 0, offset = 0, line_no = 0;
  std::string problem;
  for (auto want = e.next(8192); !want.empty(); want = e.next(8192)) {
    if (got.size() < want.size()) got.resize(want.size());
    const std::size_t r = read_full(fd, got.data(), want.size());
    for (const char* p = got.data(); (p = static_cast<const char*>(std::memchr(p, '\n', got.data() + r - p)));
         ++p)
      ++newlines;
    if (r != want.size() || std::memcmp(got.data(), want.data(), r) != 0) {
      std::size_t k = 0;
      while (k < r && k < want.size() && got[k] == want[k]) ++k;
      const auto ln = line_no + static_cast<std::uint64_t>(std::count(want.data(), want.data() + k, '\n')) + 1;
      problem = r < want.size() && k == r ? fmt::format("short: ends at byte {} (line {})", offset + r, ln)
                                          : fmt::format("differs at byte {} (line {})", offset + k, ln);
      break;
    }
    offset += r;
    line_no += static_cast<std::uint64_t>(std::count(want.data(), want.data() + want.size(), '\n'));
  }
  if (problem.empty()) {
    char extra;
    if (read_full(fd, &extra, 1) != 0) problem = "longer than expected";
  }
  ::close(fd);
  if (problem.empty() && (static_cast<std::uint64_t>(st.st_size) != want_bytes || newlines != n))
    problem = fmt::format("{} lines, {} bytes; want {} lines, {} bytes", newlines, st.st_size, n, want_bytes);
  if (!problem.empty()) problem += fmt::format(" (file has {} bytes)", st.st_size);
  return problem;
}

}  // namespace log_bench
