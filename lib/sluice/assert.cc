#include "sluice/assert.h"

#include <cstdio>
#include <cstdlib>

namespace sluice::detail {

void assert_failed(const char* condition, const char* file, int line) noexcept {
  std::fprintf(stderr, "sluice: invariant failed: %s (%s:%d)\n", condition, file, line);
  std::abort();
}

}  // namespace sluice::detail
