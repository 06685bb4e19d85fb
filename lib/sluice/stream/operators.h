// operators: the iterator helpers of Node v20's Readable
// (lib/internal/streams/operators.js): toArray, forEach, reduce, some,
// every and find, which consume a readable and report once; map, filter,
// take and drop, which return a new readable.
#pragma once

#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

#include "sluice/function.h"
#include "sluice/stream/readable.h"

namespace sluice {

// Each helper reads `r` as Node's `for await (const chunk of r)` does
// (Readable.prototype[Symbol.asyncIterator]): with read() after each
// 'readable', until 'end' (or 'close', as finished() sees it), and reports
// the stream's error. A helper that stops early (some, every, find, take)
// destroys `r`, as leaving a for-await loop does; so does one that ends or
// fails when `r` has auto_destroy (it usually is destroyed already). `r` must
// outlive the helper's callback (or the returned stream's end).
//
// The functions given to the helpers are synchronous; one that throws (a
// std::system_error gives its code, another std::exception its what() as a
// user_error()) ends the helper with that error, and `r` is destroyed.
//
// Differs from Node: no `concurrency` or `highWaterMark` options yet (Node's
// defaults: one item at a time), and no `signal`.

using item_fn = inline_function<void(std::string_view item), 32>;
using predicate_fn = inline_function<bool(std::string_view item), 32>;
using map_fn = inline_function<std::string(std::string_view item), 32>;
using reduce_fn = inline_function<std::string(std::string accumulator, std::string_view item), 32>;

using done_cb = inline_function<void(std::error_code), 32>;
using to_array_cb = inline_function<void(std::error_code, std::vector<std::string>), 32>;
using reduce_cb = inline_function<void(std::error_code, std::string), 32>;
using bool_cb = inline_function<void(std::error_code, bool), 32>;
using find_cb = inline_function<void(std::error_code, std::optional<std::string>), 32>;

/// Node: readable.toArray(). Every chunk, in order.
///
///     sluice::to_array(*r, [](std::error_code ec, std::vector<std::string> all) { use(all); });
void to_array(readable& r, to_array_cb cb);

/// Node: readable.forEach(fn). Calls `fn` for each chunk; `cb` after the last.
void for_each(readable& r, item_fn fn, done_cb cb);

/// Node: readable.reduce(fn, initial). Without `initial` the first chunk is
/// the initial value; a stream that ends without chunks then fails with
/// ERR_MISSING_ARGS ("Reduce of an empty stream requires an initial value").
void reduce(readable& r, reduce_fn fn, std::optional<std::string> initial, reduce_cb cb);

/// Node: readable.some(fn): true at the first chunk `fn` accepts (and `r`
/// is destroyed), false at the end.
void some(readable& r, predicate_fn fn, bool_cb cb);

/// Node: readable.every(fn): false at the first chunk `fn` rejects (and `r`
/// is destroyed), true at the end.
void every(readable& r, predicate_fn fn, bool_cb cb);

/// Node: readable.find(fn): the first chunk `fn` accepts (and `r` is
/// destroyed), or nullopt at the end.
void find(readable& r, predicate_fn fn, find_cb cb);

/// Node: readable.map(fn), filter(fn), take(n), drop(n): a new object-mode
/// readable (Node's Readable.from over the helper's async generator) of
/// `fn`'s results, of the chunks `fn` accepts, of the first n chunks (then
/// `r` is destroyed), or of the chunks after the first n. `r` is read as
/// the new stream is.
std::unique_ptr<readable> map(readable& r, map_fn fn);
std::unique_ptr<readable> filter(readable& r, predicate_fn fn);
std::unique_ptr<readable> take(readable& r, std::size_t n);
std::unique_ptr<readable> drop(readable& r, std::size_t n);

}  // namespace sluice
