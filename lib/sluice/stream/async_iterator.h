// async_iterator: Node v20's createAsyncIterator(stream, options)
// (lib/internal/streams/readable.js), what `for await (const chunk of r)`
// and readable.iterator() run on. The one engine under the iterator helpers
// (operators.h) and Asio's co_await loops (asio/chunks.h).
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <system_error>

#include "sluice/loop/emitter.h"
#include "sluice/base/function.h"
#include "sluice/stream/readable.h"

namespace sluice {

/// Node: readable.iterator(options).
struct iterator_options {
  /// Node: destroyOnReturn. Leaving the loop before the end (close() while
  /// the stream runs) destroys the stream. False: the stream is left as it
  /// is, and can be read again.
  bool destroy_on_return = true;
};

/// One iteration of a readable, as Node's async generator runs it: the
/// 'readable' listener (which puts the stream in paused mode) and
/// finished() wake it, read() takes each chunk, and close() is the
/// generator's `finally`.
///
/// The caller drives the loop: next() gives what the loop body has; when it
/// is `pending`, wait() is the `await new Promise(next)` and calls back once
/// there may be more. Shared (create()), because the listeners may stay on
/// a stream that close() destroys, as Node leaves them.
///
///     auto it = sluice::async_iterator::create(r);
///     // step: auto s = it->next(); if (s.kind == pending) it->wait(step); ...
///     it->close();  // leaving the loop: r is destroyed unless it ended
class async_iterator : public std::enable_shared_from_this<async_iterator> {
 public:
  /// What one turn of the loop body has.
  struct step {
    enum kind_t {
      chunk,    // `value` was read
      end,      // the loop returns (finished() said the stream is done)
      error,    // the loop throws `ec` (the stream's error, or a premature close)
      pending,  // nothing yet: wait()
    } kind;
    std::string value;
    std::error_code ec;
  };
  using waiter_fn = inline_function<void(), 32>;

  /// Adds the listeners. Create it before the stream has data: 'readable'
  /// switches it to paused mode.
  static std::shared_ptr<async_iterator> create(readable& r, const iterator_options& options = {});

  async_iterator(readable& r, const iterator_options& options);  // use create()
  ~async_iterator();
  async_iterator(const async_iterator&) = delete;
  async_iterator& operator=(const async_iterator&) = delete;

  /// Node: `const chunk = stream.destroyed ? null : stream.read()`, then
  /// the error, the end, or pending. An error or the end closes the
  /// iterator (the `finally`); after close(), `end`. No allocation beyond
  /// the stream's own.
  step next();

  /// Node: `await new Promise(next)`. `w` runs once, a microtask after the
  /// next 'readable' or the end (where Node's await resumes); not after
  /// close(). One waiter at a time.
  void wait(waiter_fn w);

  /// Runs `f` in a microtask, where Node's loop body resumes after its
  /// `for await` got a chunk (or after the generator's yield); dropped if
  /// the iterator closes first.
  void after_await(waiter_fn f);

  /// Node: the generator's `finally` (a `break`, a throw, or the end). The
  /// stream is destroyed (Node's destroyer(): with an AbortError unless it
  /// is finished) when the loop left it running and destroy_on_return is
  /// set, or when it failed and has auto_destroy; otherwise the listeners
  /// come off. Idempotent.
  void close() noexcept;

  bool closed() const noexcept { return closed_; }
  readable& stream() const noexcept { return r_; }

 private:
  enum class state { running, ended, errored };  // Node: error undefined, null or the error

  bool is_finished() const noexcept;
  void wake();

  readable& r_;
  loop& loop_;
  iterator_options options_;
  listener_id readable_listener_ = 0;
  std::function<void()> cleanup_;  // finished()'s
  state state_ = state::running;
  std::error_code error_;
  waiter_fn waiter_;
  waiter_fn woken_;  // the waiter, on its way through the microtask queue
  bool closed_ = false;
};

}  // namespace sluice
