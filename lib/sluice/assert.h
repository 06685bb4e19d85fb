// SLUICE_ASSERT: the library's invariants, checked in debug builds (no
// NDEBUG) and, on request, in release builds (-DSLUICE_ASSERTS=1). A failed
// check prints the condition and where it is, then aborts: an invariant that
// does not hold means a callback lost or called twice, which must not go on
// silently. Costs nothing when off: the condition is not evaluated.
#pragma once

#if !defined(SLUICE_ASSERTS)
#if defined(NDEBUG)
#define SLUICE_ASSERTS 0
#else
#define SLUICE_ASSERTS 1
#endif
#endif

namespace sluice::detail {
[[noreturn]] void assert_failed(const char* condition, const char* file, int line) noexcept;
}  // namespace sluice::detail

#if SLUICE_ASSERTS
#define SLUICE_ASSERT(condition) \
  ((condition) ? static_cast<void>(0) : ::sluice::detail::assert_failed(#condition, __FILE__, __LINE__))
#else
#define SLUICE_ASSERT(condition) static_cast<void>(0)
#endif
