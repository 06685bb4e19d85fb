// for_each_line: the lines of a readable, as its 'data' chunks arrive.
#pragma once

#include <string_view>
#include <system_error>
#include <type_traits>
#include <utility>

#include "sluice/base/function.h"
#include "sluice/lines/line_splitter.h"

namespace sluice {

class readable;

/// Called for each line; returning false stops the iteration.
using line_fn = inline_function<bool(std::string_view), 32>;
/// Called once when the iteration is over.
using lines_done = inline_function<void(std::error_code), 32>;

namespace detail {
void for_each_line(readable& r, line_fn fn, lines_done done, const line_options& options);
}  // namespace detail

/// Calls `fn(line)` for every line of `r` (line_splitter's rules: "\n" or
/// "\r\n" ends a line, a last line without "\n" counts), then `done(ec)`
/// exactly once. It adds a 'data' listener, so `r` starts flowing; each
/// chunk is split as it arrives, synchronously, with no waiting between
/// lines. A line inside one chunk is a view into that chunk (no copy); only
/// a line that straddles chunks is copied. A view is valid during `fn` only.
///
/// `done` hears:
/// - success after the last line, at 'end';
/// - the stream's error, at 'error';
/// - errc::line_too_long for a line longer than options.max_line_length;
/// - success when `fn` returned false (fn may return void or bool);
/// - errc::premature_close if the stream closes without 'end' or 'error',
///   or if `r` (the C++ object) is deleted before the lines end; `done`
///   then runs inside its destructor and must not touch it.
/// When the iteration stops early (line_too_long, or fn returned false),
/// `r` is destroyed without an error, as Node's `for await` destroys a
/// stream its loop leaves, and the rest of its data is dropped.
///
///     sluice::for_each_line(*in, [&](std::string_view line) { ++lines; },
///                           [&](std::error_code ec) { if (ec) report(ec); });
///     sluice::loop::current().run();
///
/// `fn` and `done` must not delete `r`; they may call r.destroy().
template <class F, class D>
  requires std::is_invocable_v<F&, std::string_view> && std::is_invocable_v<D&, std::error_code>
void for_each_line(readable& r, F&& fn, D&& done, const line_options& options = {}) {
  if constexpr (std::is_void_v<std::invoke_result_t<F&, std::string_view>>) {
    detail::for_each_line(
        r,
        [f = std::forward<F>(fn)](std::string_view line) mutable {
          f(line);
          return true;
        },
        lines_done(std::forward<D>(done)), options);
  } else {
    detail::for_each_line(r, line_fn(std::forward<F>(fn)), lines_done(std::forward<D>(done)), options);
  }
}

}  // namespace sluice
