// writable::print() with a compiled format string (fmt's FMT_COMPILE).
// Apart from writable.h so that only the code that compiles formats pays
// for <fmt/compile.h> (and fmt/format.h behind it); sluice.h includes it.
#pragma once

#include <iterator>

#include <fmt/compile.h>

#include "sluice/stream/detail/print.h"
#include "sluice/stream/writable.h"

namespace sluice {

template <class S, class... Args>
  requires detail::compiled_format<S>
bool writable::print(const S& format, Args&&... args) {
  detail::print_line line;
  if (!print_start(line.room_)) return fail_after_end({});
  fmt::format_to(std::back_inserter(line), format, args...);
  return print_commit(line.room_, line.size(), {});
}

}  // namespace sluice
