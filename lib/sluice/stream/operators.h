// operators: the iterator helpers of Node v20's Readable
// (lib/internal/streams/operators.js): toArray, forEach, reduce, some,
// every and find, which consume a readable and report once; map, filter,
// take and drop, which return a new readable.
#pragma once

#include <cstddef>
#include <memory>
#include <stop_token>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

#include "sluice/base/function.h"
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
// The overloads that take an operator_options (Node's `options`) run Node's
// map() machinery: up to `concurrency` calls of the function in flight,
// results in input order, `high_water_mark` results made ahead of the
// reader, and the `signal` looked at as Node does (at each chunk read and
// each result taken). Their functions may be asynchronous: they get the
// chunk and a completion callback, which they call once, then or later
// (Node's fn returning a promise). A completion with an error (Node: the
// promise rejects) destroys the result and the source.

using item_fn = inline_function<void(std::string_view item), 32>;
using predicate_fn = inline_function<bool(std::string_view item), 32>;
using map_fn = inline_function<std::string(std::string_view item), 32>;
using reduce_fn = inline_function<std::string(std::string accumulator, std::string_view item), 32>;

/// Node: the `options` of the iterator helpers.
struct operator_options {
  /// Node: concurrency. Calls of the function in flight at once; at least 1.
  std::size_t concurrency = 1;
  /// Node: highWaterMark. Results made ahead of the reader, beyond those in
  /// flight; Node's default is concurrency - 1.
  std::optional<std::size_t> high_water_mark;
  /// Node: signal. Once stopped, the next chunk read from the source or
  /// result taken fails with an AbortError (ABORT_ERR), which destroys the
  /// result and the source. Node looks at signal.aborted at those points and
  /// listens to nothing; so does this.
  std::stop_token signal;
};

// The completion callbacks of asynchronous functions: call once, from the
// loop's thread. An error fails the helper (Node: the promise rejects).
using map_done = inline_function<void(std::error_code, std::string), 32>;
using predicate_done = inline_function<void(std::error_code, bool), 32>;
using item_done = inline_function<void(std::error_code), 32>;
using flat_map_done = inline_function<void(std::error_code, std::vector<std::string>), 32>;
using reduce_done = inline_function<void(std::error_code, std::string), 32>;

using async_map_fn = inline_function<void(std::string_view item, map_done done), 32>;
using async_predicate_fn = inline_function<void(std::string_view item, predicate_done done), 32>;
using async_item_fn = inline_function<void(std::string_view item, item_done done), 32>;
using flat_map_fn = inline_function<std::vector<std::string>(std::string_view item), 32>;
using flat_map_stream_fn = inline_function<std::unique_ptr<readable>(std::string_view item), 32>;
using async_flat_map_fn = inline_function<void(std::string_view item, flat_map_done done), 32>;
using async_reduce_fn = inline_function<void(std::string accumulator, std::string_view item, reduce_done done), 32>;

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

/// Node: readable.reduce(fn, initial, { signal }): the reducer may be
/// asynchronous (Node's returning a promise): the next chunk is read once
/// it has called `done` with the new accumulator (an error fails reduce and
/// destroys `r`). Only the signal applies. A signal stopped before the call
/// destroys `r` with an AbortError and fails once `r` has closed; one
/// stopped later is seen at the next chunk read (not while a call is in
/// flight), as Node's.
void reduce(readable& r, async_reduce_fn fn, std::optional<std::string> initial, reduce_cb cb, operator_options o);
void reduce(readable& r, reduce_fn fn, std::optional<std::string> initial, reduce_cb cb, operator_options o);

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

/// Node: readable.map(fn, options): up to `o.concurrency` calls in flight,
/// the results in input order.
///
///     sluice::operator_options o;
///     o.concurrency = 4;
///     auto m = sluice::map(*r, [](std::string_view item, sluice::map_done done) {
///       look_up(item, [done = std::move(done)](std::error_code ec, std::string v) mutable { done(ec, v); });
///     }, o);
std::unique_ptr<readable> map(readable& r, async_map_fn fn, operator_options o = {});
std::unique_ptr<readable> map(readable& r, map_fn fn, operator_options o);

/// Node: readable.filter(fn, options).
std::unique_ptr<readable> filter(readable& r, async_predicate_fn fn, operator_options o = {});
std::unique_ptr<readable> filter(readable& r, predicate_fn fn, operator_options o);

/// Node: readable.flatMap(fn, options): each chunk gives a sequence of
/// items (Node: an iterable or a stream; here a vector), which follow one
/// another in input order.
std::unique_ptr<readable> flat_map(readable& r, flat_map_fn fn, operator_options o = {});
std::unique_ptr<readable> flat_map(readable& r, async_flat_map_fn fn, operator_options o = {});
/// Node: flatMap(fn) whose fn returns a stream: each stream (on `r`'s loop)
/// is read through, in input order, before the next one; the helper owns
/// it, and destroys it when it stops early. A stream's error fails the
/// helper; a null stream fails it (Node: `yield*` of a non-iterable throws).
std::unique_ptr<readable> flat_map(readable& r, flat_map_stream_fn fn, operator_options o = {});

/// Node: readable.forEach(fn, options), some, every and find with options:
/// forEach is map() over fn, the others read a filter() (Node's own
/// definitions), so they take the same options.
void for_each(readable& r, async_item_fn fn, done_cb cb, operator_options o = {});
void for_each(readable& r, item_fn fn, done_cb cb, operator_options o);
void some(readable& r, async_predicate_fn fn, bool_cb cb, operator_options o = {});
void some(readable& r, predicate_fn fn, bool_cb cb, operator_options o);
void every(readable& r, async_predicate_fn fn, bool_cb cb, operator_options o = {});
void every(readable& r, predicate_fn fn, bool_cb cb, operator_options o);
void find(readable& r, async_predicate_fn fn, find_cb cb, operator_options o = {});
void find(readable& r, predicate_fn fn, find_cb cb, operator_options o);

/// Node: toArray({ signal }), take(n, { signal }), drop(n, { signal }): only
/// the signal applies (Node's concurrency is map's). take's and drop's look
/// at it at their first read too, as Node's generators do before their
/// loop: stopped then, the result fails with an AbortError and `r` is left
/// as it is (not read, not destroyed).
void to_array(readable& r, to_array_cb cb, operator_options o);
std::unique_ptr<readable> take(readable& r, std::size_t n, operator_options o);
std::unique_ptr<readable> drop(readable& r, std::size_t n, operator_options o);

}  // namespace sluice
