// SLUICE_ASSERT: the library's invariants, checked when the library was
// built with them (sluice/config.h: by default when it was built without
// NDEBUG; meson -Dasserts=true in a release build). A failed
// check prints the condition and where it is, then aborts: an invariant that
// does not hold means a callback lost or called twice, which must not go on
// silently. Costs nothing when off: the condition is not evaluated.
#pragma once

// The library's own value, not the including program's NDEBUG: inline code
// (writable::write) must compile as the library's does.
#include "sluice/base/config.h"

#include <cstdint>

namespace sluice::detail {
/// SLUICE_ASSERTS as the library's own code was compiled (assert.cc).
int library_asserts() noexcept;

[[noreturn]] void assert_failed(const char* condition, const char* file, int line) noexcept;

/// A small nonzero number naming the calling thread, given on its first call.
std::uint32_t thread_tag() noexcept;
/// Fails loudly: `call` came from a thread other than the one that uses the stream.
[[noreturn]] void wrong_thread(const char* call, const char* file, int line) noexcept;
}  // namespace sluice::detail

#if SLUICE_ASSERTS
#define SLUICE_ASSERT(condition) \
  ((condition) ? static_cast<void>(0) : ::sluice::detail::assert_failed(#condition, __FILE__, __LINE__))
#else
#define SLUICE_ASSERT(condition) static_cast<void>(0)
#endif

// SLUICE_ASSERT_THREAD(tag, call): a stream belongs to one thread (its loop's),
// and `tag` (a std::uint32_t of its state, 0 until then) is claimed by the
// first thread that calls write/end/destroy/push/read on it; a call from any
// other thread fails loudly. Nothing at all when SLUICE_ASSERTS is off.
#if SLUICE_ASSERTS
#define SLUICE_ASSERT_THREAD(tag, call)                                              \
  do {                                                                               \
    const std::uint32_t sluice_assert_thread = ::sluice::detail::thread_tag();             \
    if ((tag) == 0) (tag) = sluice_assert_thread;                                          \
    else if ((tag) != sluice_assert_thread) ::sluice::detail::wrong_thread(call, __FILE__, __LINE__); \
  } while (false)
#else
#define SLUICE_ASSERT_THREAD(tag, call) static_cast<void>(0)
#endif
