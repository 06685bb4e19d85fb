// from: Node v20's Readable.from(iterable, options)
// (lib/internal/streams/from.js), for a C++ range, a generator-like
// callable, or an asynchronous pull (readable_from_async()).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <ranges>
#include <string>
#include <string_view>
#include <system_error>
#include <type_traits>
#include <utility>

#include "sluice/base/function.h"
#include "sluice/loop/loop.h"
#include "sluice/stream/readable.h"

namespace sluice {

/// Node: the options of Readable.from(), with its defaults.
struct from_options {
  /// Unset: 1 item, Node's highWaterMark for an iterable, so that the source
  /// is pulled one item ahead of the consumer. For a single string (see
  /// readable_from), the stream's usual default.
  std::optional<std::size_t> high_water_mark{};
  /// Node's Readable.from() makes an object-mode stream: each item is one
  /// chunk, never split or merged. False counts bytes instead.
  bool object_mode = true;
  bool auto_destroy = true;
  bool emit_close = true;
  loop* event_loop = nullptr;
};

/// One pull from the iterator: puts the next item in `item` and returns
/// true, or returns false at the end; an error goes in `ec` (or is thrown:
/// a std::system_error gives its code, another std::exception its what() as
/// a user_error()). This is the form readable_from() reduces every source to.
using from_next = inline_function<bool(std::string& item, std::error_code& ec), 32>;

/// The readable of readable_from(), around a pull function.
std::unique_ptr<readable> readable_from_next(from_next next, const from_options& options = {});

namespace detail {
struct from_async_link;
}

/// The answer to one pull of readable_from_async(): Node's promise that
/// iterator.next() returns, settled by calling one of item(), end() or
/// error() once, later, on the stream's loop thread (from another thread,
/// through loop::post()). Cheap to move and copy; a copy answers the same
/// pull. Once the stream is destroyed (or the pull answered) every call is
/// dropped: cancelled() then says true, so a source can stop early.
class from_completion {
 public:
  /// Node: { value, done: false }. The item becomes the next chunk.
  void item(std::string value) const;
  /// Node: { done: true }. The stream ends (push(null)).
  void end() const;
  /// Node: next() rejects. The stream is destroyed with `ec` ('error', then
  /// 'close'); an empty `ec` is taken as errc::invalid_arg_value.
  void error(std::error_code ec) const;
  /// The stream no longer waits for this answer: it was given, or the
  /// stream was destroyed (or deleted).
  bool cancelled() const noexcept;

  explicit from_completion(std::shared_ptr<detail::from_async_link> link, std::uint64_t pull) noexcept
      : link_(std::move(link)), pull_(pull) {}

 private:
  std::shared_ptr<detail::from_async_link> link_;
  std::uint64_t pull_;
};

/// One asynchronous pull: starts fetching the next item and returns; the
/// answer goes to `done` (now or later). Called again only after the
/// previous answer, and only while the stream wants more (Node's _read).
using from_async_next = inline_function<void(from_completion done), 32>;
/// Node: iterator.return() (and iterator.throw(err) for an error): called
/// once, when the stream is destroyed (or deleted), with the destroy's
/// error, so that the source stops what it is doing. A pull may be in
/// flight: its answer will be dropped.
using from_cancel = inline_function<void(std::error_code err), 32>;

/// Node: Readable.from(asyncIterable). `next` is called once per item, with
/// at most one pull in flight: the first when the stream is first read, the
/// next one as soon as an answer was pushed and push() said there is room
/// (Node's nextAsync()), so at most high_water_mark items are pulled ahead of
/// the consumer. end() ends the stream; error() destroys it with the error;
/// an exception thrown by `next` itself counts as error() (see from_next).
/// An answer given inside `next` is taken at once, without a tick (Node's
/// await would take a microtask).
///
///     auto r = sluice::readable_from_async(
///         [&db](sluice::from_completion done) {
///           db.async_fetch_row([done](std::optional<std::string> row) {
///             if (row) done.item(std::move(*row)); else done.end();
///           });
///         },
///         [&db](std::error_code) { db.cancel(); });
///
/// If the stream is destroyed while a pull is in flight, 'close' follows on
/// the next tick as for every readable, `cancel` is called at once, and the
/// late answer is dropped (the completion outlives the stream safely).
std::unique_ptr<readable> readable_from_async(from_async_next next, from_cancel cancel,
                                              const from_options& options = {});
std::unique_ptr<readable> readable_from_async(from_async_next next, const from_options& options = {});

/// Node: Readable.from(string): a stream of that one chunk.
std::unique_ptr<readable> readable_from(std::string_view s, const from_options& options = {});
inline std::unique_ptr<readable> readable_from(const char* s, const from_options& options = {}) {
  return readable_from(std::string_view(s), options);
}

namespace detail {
template <class F>
using generated_t = std::remove_cvref_t<decltype(std::declval<F&>()())>;
template <class F>
using generated_ec_t = std::remove_cvref_t<decltype(std::declval<F&>()(std::declval<std::error_code&>()))>;
template <class T>
inline constexpr bool is_optional_v = false;
template <class T>
inline constexpr bool is_optional_v<std::optional<T>> = true;

// A callable that yields std::optional<item> (nullopt at the end), called
// with no arguments or with a std::error_code& that it sets on failure.
template <class F>
concept generator_like = requires { typename generated_t<F>; } && is_optional_v<generated_t<F>>;
template <class F>
concept generator_like_ec = requires { typename generated_ec_t<F>; } && is_optional_v<generated_ec_t<F>>;

template <class T>
void assign_item(std::string& item, T&& v) {
  static_assert(std::is_constructible_v<std::string, T&&>, "readable_from: items must be strings");
  if constexpr (std::is_same_v<std::remove_cvref_t<T>, std::string>)
    item = std::forward<T>(v);
  else
    item = std::string(std::forward<T>(v));
}
}  // namespace detail

/// Node: Readable.from(iterable). A readable whose chunks are the items of
/// `range`, pulled one at a time as the stream asks for data (Node's _read):
/// while push() says there is room, the next item is pulled at once; the
/// stream ends (push(null)) at the range's end. The range is moved or copied
/// into the stream (pass a view, std::views::all(v) or std::ref, to iterate
/// one in place); items are moved out of a range the stream owns and copied
/// out of a view. Items must be strings (anything std::string is made from).
///
///     auto r = sluice::readable_from(std::vector<std::string>{"a", "b", "c"});
///     r->on(sluice::event::data, [](std::string_view item) { use(item); });
///
/// An exception thrown by the range's iteration destroys the stream with
/// the error (see from_next), as Node destroys it with what the iterator
/// throws.
template <std::ranges::input_range R>
  requires(!std::is_convertible_v<R, std::string_view>)
std::unique_ptr<readable> readable_from(R&& range, const from_options& options = {}) {
  using stored = std::remove_cvref_t<R>;
  struct iteration {
    stored r;
    std::ranges::iterator_t<stored> it;
    explicit iteration(R&& in) : r(std::forward<R>(in)), it(std::ranges::begin(r)) {}
  };
  auto state = std::make_unique<iteration>(std::forward<R>(range));
  return readable_from_next(
      [s = std::move(state)](std::string& item, std::error_code&) {
        if (s->it == std::ranges::end(s->r)) return false;
        if constexpr (std::ranges::view<stored>)
          detail::assign_item(item, *s->it);
        else
          detail::assign_item(item, std::ranges::iter_move(s->it));
        ++s->it;
        return true;
      },
      options);
}

/// Node: Readable.from(generator()). `next` is called for each item and
/// returns it, or std::nullopt at the end; it may take a std::error_code&
/// to report a failure, or throw (see from_next). Either way the stream is
/// destroyed with the error.
///
///     int n = 0;
///     auto r = sluice::readable_from([&n]() -> std::optional<std::string> {
///       if (n == 3) return std::nullopt;
///       return std::to_string(n++);
///     });
template <class F>
  requires(detail::generator_like<F> || detail::generator_like_ec<F>)
std::unique_ptr<readable> readable_from(F&& next, const from_options& options = {}) {
  return readable_from_next(
      [f = std::forward<F>(next)](std::string& item, std::error_code& ec) mutable {
        if constexpr (detail::generator_like_ec<F>) {
          auto v = f(ec);
          if (ec || !v) return false;
          detail::assign_item(item, std::move(*v));
        } else {
          auto v = f();
          if (!v) return false;
          detail::assign_item(item, std::move(*v));
        }
        return true;
      },
      options);
}

}  // namespace sluice
