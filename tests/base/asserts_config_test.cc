// SLUICE_ASSERTS is the library's, not the including program's: this file is
// compiled with the opposite NDEBUG of the library's build (tests/meson.build),
// as a user's program may be, and must still see the value the library was
// built with (sluice/config.h). Otherwise writable::write, inline in
// writable.h, would check its thread and invariants in one build and not in
// the other, in one program.
#include <doctest/doctest.h>

#include "sluice/base/assert.h"
#include "sluice/stream/writable.h"

TEST_CASE("this file is compiled with the other NDEBUG than the library") {
#if defined(NDEBUG)
  const bool ndebug = true;
#else
  const bool ndebug = false;
#endif
  CHECK(ndebug != bool(SLUICE_TEST_LIBRARY_NDEBUG));
}

TEST_CASE("SLUICE_ASSERTS here is the value the library was compiled with") {
  CHECK(SLUICE_ASSERTS == sluice::detail::library_asserts());
}
