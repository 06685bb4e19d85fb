// from_awaitable: Node's Readable.from(asyncGenerator) for Boost.Asio
// coroutines: a readable whose items are the results of one awaitable each,
// on the io_context the stream's loop is attached to.
#pragma once

// g++ 12 with C++20 coroutines: <utility> before any Asio header.
#include <utility>

#include <boost/asio/awaitable.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/execution/context.hpp>
#include <boost/asio/query.hpp>
#include <exception>
#include <memory>
#include <optional>
#include <stop_token>
#include <string>
#include <system_error>
#include <type_traits>

#include "sluice/asio/attach.h"
#include "sluice/base/errors.h"
#include "sluice/loop/loop.h"
#include "sluice/stream/from.h"
#include "sluice/stream/readable.h"

namespace sluice::asio {

namespace detail {

template <class A>
struct awaited_optional : std::false_type {};
template <class T, class E>
struct awaited_optional<boost::asio::awaitable<std::optional<T>, E>> : std::true_type {
  using item = T;
};

template <class F>
using pull_with_stop_t = std::remove_cvref_t<std::invoke_result_t<F&, std::stop_token>>;
template <class F>
using pull_plain_t = std::remove_cvref_t<std::invoke_result_t<F&>>;

// A callable returning boost::asio::awaitable<std::optional<T>>, called with
// a std::stop_token or with nothing.
template <class F>
concept awaitable_pull_with_stop =
    std::is_invocable_v<F&, std::stop_token> && awaited_optional<pull_with_stop_t<F>>::value;
template <class F>
concept awaitable_pull_plain = std::is_invocable_v<F&> && awaited_optional<pull_plain_t<F>>::value;

// The awaitable type `next` returns, in whichever form it takes.
template <class F>
struct pull_result {
  using type = pull_plain_t<F>;
};
template <awaitable_pull_with_stop F>
struct pull_result<F> {
  using type = pull_with_stop_t<F>;
};

// What an exception a coroutine threw becomes: as readable_from's from_next.
inline std::error_code thrown_error(std::exception_ptr e) noexcept {
  try {
    std::rethrow_exception(e);
  } catch (const std::system_error& x) {
    return x.code();
  } catch (const std::exception& x) {
    return user_error(x.what());
  } catch (...) {
    return user_error("unknown exception");
  }
}

}  // namespace detail

/// Node: Readable.from(asyncGenerator), for a Boost.Asio coroutine. `next`
/// is called once per item and returns a boost::asio::awaitable of
/// std::optional<T> (T: a string, or anything std::string is made from);
/// readable_from() co_spawns it on `ex` and pushes what it co_returns, or
/// ends the stream at std::nullopt. A coroutine that throws destroys the
/// stream with the error (a std::system_error's code, another exception's
/// what() as a user_error()). Pulls follow readable_from_async(): one
/// coroutine in flight at a time, at most high_water_mark items ahead of the
/// consumer (1 by default, as Node's).
///
///     auto r = sluice::asio::readable_from(ctx.get_executor(),
///         [&](std::stop_token stop) -> boost::asio::awaitable<std::optional<std::string>> {
///           boost::asio::steady_timer t(ctx, std::chrono::milliseconds(10));
///           std::stop_callback on_stop(stop, [&t] { t.cancel(); });
///           co_await t.async_wait(boost::asio::use_awaitable);
///           if (stop.stop_requested() || n == 3) co_return std::nullopt;
///           co_return std::to_string(n++);
///         });
///
/// `ex` must run on the io_context that the stream's loop (options.event_loop,
/// else loop::current()) is attached to (sluice/asio/attach.h), so that each
/// result is pushed on the loop's thread; any other executor is refused with
/// a stream_error (invalid_argument). While a coroutine is in flight the
/// loop is held, so that loop::run() on the attached loop waits for it.
///
/// Destroy: Boost 1.74's awaitables have no per-operation cancellation
/// (cancellation slots came with Boost 1.77), so a coroutine in flight
/// cannot be stopped from outside. Instead, at the stream's destroy (or
/// deletion) the std::stop_token that `next` may take is stopped, at once
/// (Node's iterator.return()): the coroutine can check it or cancel its own
/// waits through a std::stop_callback; whatever it co_returns or throws
/// afterwards is dropped, and nothing more is pulled. The stream's 'close'
/// does not wait for it.
template <class Executor, class F>
  requires(detail::awaitable_pull_with_stop<F> || detail::awaitable_pull_plain<F>)
std::unique_ptr<readable> readable_from(const Executor& ex, F next, const from_options& options = {}) {
  loop& l = options.event_loop ? *options.event_loop : loop::current();
  boost::asio::io_context* ctx = context_of(l);
  if (!ctx || &boost::asio::query(ex, boost::asio::execution::context) != static_cast<boost::asio::execution_context*>(ctx))
    throw stream_error(std::make_error_code(std::errc::invalid_argument),
                       "sluice::asio::readable_from: the executor must run on the io_context the stream's loop is attached to");

  using awaitable_t = typename detail::pull_result<F>::type;
  using item_t = typename detail::awaited_optional<awaitable_t>::item;

  // Shared by the pulls, the cancel hook and the coroutines' handlers: a
  // handler may run after the stream went.
  struct state {
    F next;
    Executor ex;
    loop* l;
    std::stop_source stop;
    bool held = false;  // the loop is held for a coroutine in flight
    void release() noexcept {
      if (held) {
        held = false;
        l->release();
      }
    }
  };
  auto s = std::make_shared<state>(state{std::move(next), ex, &l, {}, false});

  return readable_from_async(
      [s](from_completion done) {
        awaitable_t item = [&] {
          if constexpr (detail::awaitable_pull_with_stop<F>)
            return s->next(s->stop.get_token());
          else
            return s->next();
        }();
        s->l->hold();
        s->held = true;
        boost::asio::co_spawn(s->ex, std::move(item),
                              [s, done](std::exception_ptr e, std::optional<item_t> v) {
                                s->release();
                                if (done.cancelled()) return;  // the stream was destroyed: dropped
                                if (e) {
                                  done.error(detail::thrown_error(e));
                                } else if (!v) {
                                  done.end();
                                } else {
                                  std::string chunk;
                                  sluice::detail::assign_item(chunk, std::move(*v));
                                  done.item(std::move(chunk));
                                }
                              });
      },
      [s](std::error_code) {
        s->stop.request_stop();
        s->release();
      },
      options);
}

}  // namespace sluice::asio
