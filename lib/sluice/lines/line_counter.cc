#include "sluice/lines/line_counter.h"

#include <fcntl.h>
#include <poll.h>
#include <setjmp.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <memory>
#include <mutex>

#include "sluice/base/errors.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#define SLUICE_COUNT_X86 1
#endif

namespace sluice {

namespace {

std::size_t count_memchr(const char* p, std::size_t n) noexcept {
  std::size_t total = 0;
  const char* const end = p + n;
  while (p < end) {
    const void* nl = std::memchr(p, '\n', static_cast<std::size_t>(end - p));
    if (!nl) break;
    ++total;
    p = static_cast<const char*>(nl) + 1;
  }
  return total;
}

#ifdef SLUICE_COUNT_X86
// Both loops compare 16 or 32 bytes with "\n" and subtract the mask (0 or
// -1 a byte) from byte counters, which take 255 rounds before they could
// wrap; then one psadbw adds each group of 8 counters up. That is three
// instructions a vector and no popcount, so the loop runs at the speed of
// the loads.
std::size_t count_tail(const char* p, std::size_t n) noexcept {
  std::size_t total = 0;
  for (std::size_t i = 0; i < n; ++i) total += p[i] == '\n';
  return total;
}

std::size_t count_sse2(const char* p, std::size_t n) noexcept {
  const __m128i newline = _mm_set1_epi8('\n');
  const __m128i zero = _mm_setzero_si128();
  std::size_t total = 0;
  while (n >= 16) {
    std::size_t rounds = std::min<std::size_t>(n / 16, 255);
    n -= rounds * 16;
    __m128i counters = zero;
    for (; rounds > 0; --rounds, p += 16)
      counters = _mm_sub_epi8(counters,
                              _mm_cmpeq_epi8(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)), newline));
    const __m128i sums = _mm_sad_epu8(counters, zero);
    total += static_cast<std::size_t>(_mm_cvtsi128_si64(sums)) +
             static_cast<std::size_t>(_mm_cvtsi128_si64(_mm_unpackhi_epi64(sums, sums)));
  }
  return total + count_tail(p, n);
}

__attribute__((target("avx2"))) std::size_t count_avx2(const char* p, std::size_t n) noexcept {
  const __m256i newline = _mm256_set1_epi8('\n');
  const __m256i zero = _mm256_setzero_si256();
  std::size_t total = 0;
  while (n >= 32) {
    std::size_t rounds = std::min<std::size_t>(n / 32, 255);
    n -= rounds * 32;
    __m256i counters = zero;
    for (; rounds > 0; --rounds, p += 32)
      counters = _mm256_sub_epi8(
          counters, _mm256_cmpeq_epi8(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)), newline));
    const __m256i sums = _mm256_sad_epu8(counters, zero);
    total += static_cast<std::size_t>(_mm256_extract_epi64(sums, 0)) +
             static_cast<std::size_t>(_mm256_extract_epi64(sums, 1)) +
             static_cast<std::size_t>(_mm256_extract_epi64(sums, 2)) +
             static_cast<std::size_t>(_mm256_extract_epi64(sums, 3));
  }
  return total + count_sse2(p, n);
}

bool has_avx2() noexcept {
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx2");
}
#endif

detail::newline_counter pick_count() noexcept {
#ifdef SLUICE_COUNT_X86
  return has_avx2() ? count_avx2 : count_sse2;
#else
  return count_memchr;
#endif
}

}  // namespace

std::size_t count_newlines(std::string_view bytes) noexcept {
  static const detail::newline_counter count = pick_count();
  return count(bytes.data(), bytes.size());
}

detail::newline_counter detail::newline_counter_named(std::string_view name) noexcept {
  if (name == "memchr") return count_memchr;
#ifdef SLUICE_COUNT_X86
  if (name == "sse2") return count_sse2;
  if (name == "avx2" && has_avx2()) return count_avx2;
#endif
  return nullptr;
}

bool line_counter::fail(std::error_code& ec) noexcept {
  failed_ = true;
  ec = make_error_code(errc::line_too_long);
  return false;
}

// Whether a line of `gap` bytes before its "\n" is short enough: the "\r" of
// a "\r\n" is not part of it.
bool line_counter::fits(std::size_t gap, char before_newline) const noexcept {
  return gap <= max_ || (gap - 1 == max_ && before_newline == '\r');
}

// Counts the lines that end after `first` up to `last` (both "\n" of one
// chunk). When they are no longer together than the maximum, none of them
// can be too long, and a count of the newlines is enough; else each is
// measured.
bool line_counter::count_inside(const char* first, const char* last, std::error_code& ec) noexcept {
  const char* from = first + 1;
  if (static_cast<std::size_t>(last - from) <= max_) {
    lines_ += count_newlines(std::string_view(from, static_cast<std::size_t>(last - from) + 1));
    return true;
  }
  while (from <= last) {
    const char* nl = static_cast<const char*>(std::memchr(from, '\n', static_cast<std::size_t>(last - from) + 1));
    const auto gap = static_cast<std::size_t>(nl - from);
    if (!fits(gap, gap > 0 ? nl[-1] : '\0')) return fail(ec);
    ++lines_;
    from = nl + 1;
  }
  return true;
}

bool line_counter::feed(std::string_view chunk, std::error_code& ec) noexcept {
  if (failed_) return fail(ec);
  if (chunk.empty()) return true;
  const char* const p = chunk.data();
  const char* const end = p + chunk.size();
  const char* first = static_cast<const char*>(std::memchr(p, '\n', chunk.size()));
  if (first) {
    // The line that was open when the chunk came ends here.
    if (!fits(open_ + static_cast<std::size_t>(first - p), first > p ? first[-1] : last_byte_)) return fail(ec);
    ++lines_;
    const char* last = static_cast<const char*>(::memrchr(first, '\n', static_cast<std::size_t>(end - first)));
    if (last != first && !count_inside(first, last, ec)) return false;
    open_ = static_cast<std::size_t>(end - last - 1);
  } else {
    open_ += chunk.size();
  }
  last_byte_ = end[-1];
  // Past max + 1 bytes (the last may be the "\r" of a "\r\n") the open line
  // is too long already, whatever follows: an endless line ends the count.
  if (open_ > 0 && open_ - 1 > max_) return fail(ec);
  return true;
}

bool line_counter::finish(std::error_code& ec) noexcept {
  if (failed_) return fail(ec);
  if (open_ > 0) {
    // Without its "\n", a last line keeps a final "\r".
    if (open_ > max_) return fail(ec);
    ++lines_;
    open_ = 0;
  }
  return true;
}

namespace {

std::size_t piece_size(const line_options& options) noexcept {
  return options.buffer_size == 0 ? line_options{}.buffer_size : options.buffer_size;
}

// Feeds `counter` what read() gives from the fd's offset to its end.
std::size_t count_read(int fd, line_counter& counter, std::size_t size, std::error_code& ec) {
  const auto buffer = std::make_unique_for_overwrite<char[]>(size);
  // A hint for files (read-ahead); pipes and sockets refuse it, harmlessly.
  (void)::posix_fadvise(fd, 0, 0, POSIX_FADV_SEQUENTIAL);
  for (;;) {
    const ssize_t n = ::read(fd, buffer.get(), size);
    if (n > 0) {
      if (!counter.feed(std::string_view(buffer.get(), static_cast<std::size_t>(n)), ec)) return counter.lines();
      continue;
    }
    if (n == 0) {
      counter.finish(ec);
      return counter.lines();
    }
    if (errno == EINTR) continue;
    if (errno == EAGAIN || errno == EWOULDBLOCK) {
      pollfd p{fd, POLLIN, 0};
      while (::poll(&p, 1, -1) < 0 && errno == EINTR) {
      }
      continue;  // readable, at the end, or in error: read() will say which
    }
    ec = std::error_code(errno, std::system_category());
    return counter.lines();
  }
}

// ---- SIGBUS while counting mapped bytes

// Where the handler jumps to: set only while this thread reads mapped bytes.
thread_local sigjmp_buf* fault_jump = nullptr;

// The handler is installed while at least one thread counts mapped bytes;
// the handler before it is kept in previous_sigbus and put back by the last
// to leave.
std::mutex sigbus_mutex;
int sigbus_users = 0;
struct sigaction previous_sigbus;

extern "C" void on_sigbus(int, siginfo_t* info, void*) {
  // si_code > 0: a fault, not a signal sent with kill() or raise().
  if (sigjmp_buf* jump = fault_jump; jump && info->si_code > 0) siglongjmp(*jump, 1);
  // Not ours (another thread's fault, or one outside a count): put the
  // previous handler back and return. A fault runs its instruction again
  // and meets that handler, or the default action, as if we were not here;
  // a sent SIGBUS is sent again, and arrives once this handler returns.
  ::sigaction(SIGBUS, &previous_sigbus, nullptr);
  if (info->si_code <= 0) ::raise(SIGBUS);
}

class sigbus_guard {
 public:
  sigbus_guard() noexcept {
    std::lock_guard lock(sigbus_mutex);
    if (sigbus_users++ > 0) return;
    struct sigaction ours {};
    ours.sa_sigaction = on_sigbus;
    ours.sa_flags = SA_SIGINFO;
    ::sigemptyset(&ours.sa_mask);
    ::sigaction(SIGBUS, &ours, &previous_sigbus);
  }
  ~sigbus_guard() {
    std::lock_guard lock(sigbus_mutex);
    if (--sigbus_users == 0) ::sigaction(SIGBUS, &previous_sigbus, nullptr);
  }
  sigbus_guard(const sigbus_guard&) = delete;
  sigbus_guard& operator=(const sigbus_guard&) = delete;
};

// Mapped a window at a time: 4 MiB measured best on a 200 MB file (1 MiB
// cost 2-5% more CPU, 256 KiB 15% more: a mmap() and munmap() each; 64 and
// 256 MiB 5-8% more).
constexpr std::size_t map_window = 4 * 1024 * 1024;
// Below this, there is too little to gain for the two extra syscalls.
constexpr off_t map_at_least = 1024 * 1024;

}  // namespace

std::size_t count_lines(int fd, std::error_code& ec, const line_options& options) {
  line_counter counter(options.max_line_length);
  return count_read(fd, counter, piece_size(options), ec);
}

detail::mapped_feed detail::feed_mapped(line_counter& counter, std::string_view bytes, std::size_t piece,
                                        std::error_code& ec) noexcept {
  const line_counter before = counter;
  const sigbus_guard guard;
  sigjmp_buf jump;
  if (sigsetjmp(jump, 1) != 0) {
    // The handler jumped here from inside feed() (which holds no resource):
    // the window's count is partial, so it is dropped.
    fault_jump = nullptr;
    counter = before;
    return mapped_feed::faulted;
  }
  fault_jump = &jump;
  bool ok = true;
  for (std::size_t at = 0; ok && at < bytes.size(); at += piece) ok = counter.feed(bytes.substr(at, piece), ec);
  fault_jump = nullptr;
  return ok ? mapped_feed::ok : mapped_feed::failed;
}

std::size_t count_lines_mapped(int fd, std::error_code& ec, const line_options& options) {
  line_counter counter(options.max_line_length);
  const std::size_t read_size = piece_size(options);
  // The mapped bytes go to the counter in pieces as long as the longest
  // line allowed (up to a window): a piece that long cannot hold a line too
  // long between its first and last "\n", so the counter counts its
  // newlines and measures no line. 1 MiB pieces (the default maximum) cost
  // 3% less CPU than 64 KiB ones on a 200 MB file: fewer memchr() and
  // memrchr() calls for the lines at their ends.
  const std::size_t piece = std::max(read_size, std::min(options.max_line_length, map_window));
  struct stat st {};
  const off_t start = ::lseek(fd, 0, SEEK_CUR);
  if (start < 0 || ::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_size - start < map_at_least)
    return count_read(fd, counter, read_size, ec);
  const auto page = static_cast<off_t>(::sysconf(_SC_PAGESIZE));
  off_t at = start;
  while (at < st.st_size) {
    const off_t base = at - at % page;  // mmap() wants an offset on a page
    const auto length = static_cast<std::size_t>(std::min<off_t>(map_window, st.st_size - base));
    void* const map = ::mmap(nullptr, length, PROT_READ, MAP_PRIVATE, fd, base);
    if (map == MAP_FAILED) break;  // read() what is left, and let it say what is wrong
    const auto skip = static_cast<std::size_t>(at - base);
    const detail::mapped_feed fed =
        detail::feed_mapped(counter, std::string_view(static_cast<const char*>(map) + skip, length - skip), piece, ec);
    ::munmap(map, length);
    if (fed == detail::mapped_feed::failed) return counter.lines();
    if (fed == detail::mapped_feed::faulted) break;  // the file shrank: read() tells what is left
    at = base + static_cast<off_t>(length);
  }
  // read() goes on where the mapped count stopped: the end of the file as it
  // was at the start (anything written since is read), or the window that
  // faulted.
  if (::lseek(fd, at, SEEK_SET) < 0) {
    ec = std::error_code(errno, std::system_category());
    return counter.lines();
  }
  return count_read(fd, counter, read_size, ec);
}

}  // namespace sluice
