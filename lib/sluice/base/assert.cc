#include "sluice/base/assert.h"

#include <atomic>
#include <cstdio>
#include <cstdlib>

namespace sluice::detail {

int library_asserts() noexcept { return SLUICE_ASSERTS; }

void assert_failed(const char* condition, const char* file, int line) noexcept {
  std::fprintf(stderr, "sluice: invariant failed: %s (%s:%d)\n", condition, file, line);
  std::abort();
}

std::uint32_t thread_tag() noexcept {
  static std::atomic<std::uint32_t> next{1};
  thread_local const std::uint32_t tag = next.fetch_add(1, std::memory_order_relaxed);
  return tag;
}

void wrong_thread(const char* call, const char* file, int line) noexcept {
  std::fprintf(stderr,
               "sluice: %s called from a thread other than the stream's (%s:%d); a stream and its loop "
               "belong to one thread: hand work to it with loop::post()\n",
               call, file, line);
  std::abort();
}

}  // namespace sluice::detail
