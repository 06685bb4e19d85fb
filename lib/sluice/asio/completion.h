// completion: how sluice's awaitable operations hand a result to an Asio
// completion handler (a coroutine's use_awaitable, a callback) without
// allocating, and never from inside a stream's event.
#pragma once

// g++ 12 with C++20 coroutines: <utility> before any Asio header.
#include <utility>

#include <boost/asio/associated_executor.hpp>
#include <boost/asio/async_result.hpp>
#include <boost/asio/execution/context.hpp>
#include <boost/asio/query.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <exception>
#include <memory>
#include <system_error>
#include <type_traits>

#include "sluice/asio/attach.h"
#include "sluice/base/assert.h"
#include "sluice/base/errors.h"
#include "sluice/base/function.h"
#include "sluice/loop/loop.h"

namespace sluice::asio::detail {

/// No value: the operation only succeeds or fails (a writable's room).
struct none {};

/// One pending operation, type-erased: called once with the error (or none)
/// and the value. Inline, so that waiting allocates nothing: a use_awaitable
/// handler is 64 bytes on Boost 1.74 (the coroutine and its any_io_executor),
/// plus an executor and a pointer here. A larger handler (a callback with
/// big captures) goes to the heap, once per operation.
template <class Value>
using pending = inline_function<void(std::error_code, Value&&), 96>;

/// The executor for handlers that have none of their own (plain callbacks):
/// the io_context the loop is attached to.
inline boost::asio::io_context::executor_type executor_for(loop& l) {
  boost::asio::io_context* ctx = context_of(l);
  if (!ctx) throw stream_error(std::make_error_code(std::errc::invalid_argument), "sluice::asio: the stream's loop is not attached to an io_context");
  return ctx->get_executor();
}

// The handler always runs later, never inside the initiating call nor inside
// a stream event: a coroutine resumed there may write, end or destroy the
// stream freely. A handler whose executor runs on the loop's io_context (a
// use_awaitable coroutine spawned on it, a plain callback) runs from the
// loop's tick queue, or from the microtask that found the result (an
// iterator's wake-up), as a resolved promise does in Node: no Asio
// operation, and no allocation, per completion. Any other executor gets an
// asio::post.

template <class Executor>
bool runs_on(const Executor& ex, boost::asio::io_context::executor_type fallback) {
  return &boost::asio::query(ex, boost::asio::execution::context) == &fallback.context();
}

template <class Value, class Handler, class... Args>
void call(Handler& h, std::error_code ec, Value&& v, Args... out) {
  constexpr bool throwing = sizeof...(Args) == 0;
  if constexpr (throwing) {
    std::exception_ptr e = ec ? std::make_exception_ptr(stream_error(ec)) : nullptr;
    if constexpr (std::is_same_v<Value, none>)
      std::move(h)(e);
    else
      std::move(h)(e, std::move(v));
  } else {
    ((*out = ec), ...);
    if constexpr (std::is_same_v<Value, none>)
      std::move(h)();
    else
      std::move(h)(std::move(v));
  }
}

/// For signature void(std::exception_ptr[, Value]) (no `out`): the error as
/// a sluice::stream_error (a std::system_error), thrown by co_await. For
/// void([Value]) (`out` given): the error goes to `*out` first.
template <class Value, class Handler, class... Out>
auto make_pending(Handler&& h, boost::asio::io_context::executor_type fallback, Out... out) {
  return [h = std::forward<Handler>(h), fallback, out...](std::error_code ec, Value&& v) mutable {
    auto ex = boost::asio::get_associated_executor(h, fallback);
    if (runs_on(ex, fallback)) {
      call<Value>(h, ec, std::move(v), out...);
    } else {
      boost::asio::post(ex, [h = std::move(h), ec, v = std::move(v), out...]() mutable {
        call<Value>(h, ec, std::move(v), out...);
      });
    }
  };
}

/// What an awaitable operation's object holds: the pending handler, and the
/// result on its way to it.
///
/// The handler is moved once from the initiation into pending_ (arm()
/// builds it there) and once out of it to be called (a use_awaitable
/// handler is a type-erased any_io_executor and the coroutine's thread:
/// each move and destroy of it is two indirect calls). It must leave pending_ before it runs: the
/// coroutine it resumes starts the next operation, which arms pending_
/// again, while the handler that resumed it is still running.
template <class Value>
class operation {
 public:
  explicit operation(loop& l) : loop_(l), executor_(executor_for(l)) {}
  ~operation() { loop_.cancel(this); }
  operation(const operation&) = delete;
  operation& operator=(const operation&) = delete;

  boost::asio::io_context::executor_type executor() const noexcept { return executor_; }

 protected:
  /// Takes make_pending()'s function object: built in pending_ itself (empty
  /// here), not in a pending<Value> moved in after, so that a use_awaitable
  /// handler (its any_io_executor's move and destroy are indirect calls)
  /// moves three times an operation (into the function object, into
  /// pending_, out to be called), not six.
  template <class F>
  void arm(F&& f) {
    // One operation at a time: a second would take the place of a handler
    // that waits, or whose result is on its way, and it would never be called.
    SLUICE_ASSERT(!pending_ && "one operation at a time");
    std::destroy_at(&pending_);
    try {
      std::construct_at(&pending_, std::forward<F>(f));
    } catch (...) {  // a handler too big to be inline, and no memory for it
      std::construct_at(&pending_);
      throw;
    }
    completing_ = false;
  }
  /// Whether an operation waits for its result.
  bool waiting() const noexcept { return static_cast<bool>(pending_) && !completing_; }
  /// Ends the operation: its handler runs from the next tick. For a result
  /// found inside the initiating call or inside a stream event, where the
  /// handler must not run (it may resume a coroutine that writes, ends or
  /// destroys the stream).
  void complete(std::error_code ec, Value v) noexcept {
    completing_ = true;
    ready_ec_ = ec;
    ready_value_ = std::move(v);
    loop_.next_tick([this] {
      completing_ = false;
      auto p = std::move(pending_);
      pending_ = nullptr;
      p(ready_ec_, std::move(ready_value_));
    }, this);
  }
  /// Ends the operation and runs its handler now. Only from a task of the
  /// loop's own that runs outside any stream event and any initiating call
  /// (the async_iterator's wake-up, a microtask: where Node's `for await`
  /// resumes), which is what complete()'s tick would be: this saves the
  /// tick. The handler may destroy this object: nothing touches it after.
  void complete_now(std::error_code ec, Value v) noexcept {
    auto p = std::move(pending_);
    pending_ = nullptr;
    p(ec, std::move(v));
  }

 private:
  loop& loop_;
  boost::asio::io_context::executor_type executor_;
  pending<Value> pending_;
  bool completing_ = false;  // complete() queued the handler's tick
  std::error_code ready_ec_;
  Value ready_value_{};
};

/// async_initiate for an object with start(F), F make_pending()'s function
/// object, which start() gives to arm(): the throwing form.
template <class Value, class Signature, class Object, class Token>
auto initiate(Object& obj, Token&& token) {
  return boost::asio::async_initiate<Token, Signature>(
      [&obj](auto handler) { obj.start(make_pending<Value>(std::move(handler), obj.executor())); }, token);
}

/// The same, with the error in `ec`.
template <class Value, class Signature, class Object, class Token>
auto initiate(Object& obj, std::error_code& ec, Token&& token) {
  return boost::asio::async_initiate<Token, Signature>(
      [&obj, out = &ec](auto handler) { obj.start(make_pending<Value>(std::move(handler), obj.executor(), out)); },
      token);
}

}  // namespace sluice::asio::detail
