// Counts calls to the global operator new in the executable that includes
// this header (include it in exactly one .cc: it replaces operator new and
// delete). Measure between two reads with nothing else in between: doctest
// itself allocates inside CHECK.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdlib>
#include <new>

namespace sluice::test {
// Atomic: tests with threads of their own (worker_sink_test) allocate on
// several threads at once.
inline std::atomic<std::size_t> allocations{0};
inline std::size_t allocation_count() noexcept { return allocations.load(std::memory_order_relaxed); }
}  // namespace sluice::test

namespace sluice::test::detail {
inline void* counted_alloc(std::size_t n, std::size_t align) {
  allocations.fetch_add(1, std::memory_order_relaxed);
  if (n == 0) n = 1;
  void* p = align > alignof(std::max_align_t) ? std::aligned_alloc(align, (n + align - 1) / align * align)
                                               : std::malloc(n);
  if (!p) throw std::bad_alloc();
  return p;
}
}  // namespace sluice::test::detail

void* operator new(std::size_t n) { return sluice::test::detail::counted_alloc(n, 0); }
void* operator new[](std::size_t n) { return sluice::test::detail::counted_alloc(n, 0); }
void* operator new(std::size_t n, std::align_val_t a) {
  return sluice::test::detail::counted_alloc(n, static_cast<std::size_t>(a));
}
void* operator new[](std::size_t n, std::align_val_t a) {
  return sluice::test::detail::counted_alloc(n, static_cast<std::size_t>(a));
}
void* operator new(std::size_t n, const std::nothrow_t&) noexcept {
  try {
    return sluice::test::detail::counted_alloc(n, 0);
  } catch (...) {
    return nullptr;
  }
}
void* operator new[](std::size_t n, const std::nothrow_t&) noexcept {
  try {
    return sluice::test::detail::counted_alloc(n, 0);
  } catch (...) {
    return nullptr;
  }
}
void operator delete(void* p) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t) noexcept { std::free(p); }
void operator delete(void* p, std::align_val_t) noexcept { std::free(p); }
void operator delete[](void* p, std::align_val_t) noexcept { std::free(p); }
void operator delete(void* p, std::size_t, std::align_val_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t, std::align_val_t) noexcept { std::free(p); }
