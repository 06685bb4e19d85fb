// chunks and lines: Node's `for await (const chunk of readable)`, and the same
// over lines, as co_await in a loop.
#pragma once

// g++ 12 with C++20 coroutines: <utility> before any Asio header.
#include <utility>

#include <cstddef>
#include <exception>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>

#include "sluice/asio/completion.h"
#include <memory>

#include "sluice/lines/line_splitter.h"
#include "sluice/stream/async_iterator.h"
#include "sluice/stream/readable.h"

namespace sluice::asio {

namespace detail {

// What both iterations share: one async_iterator (Node's
// createAsyncIterator(), the engine the iterator helpers run on too), with
// destroy_on_return unset, and the step it last gave. As Node's: a
// 'readable' listener puts the stream in paused mode, read() takes what is
// buffered, and the end is finished()'s (after 'close', for a stream that
// emits one).
template <class Value>
class readable_iteration : public operation<Value> {
 protected:
  explicit readable_iteration(readable& r);
  ~readable_iteration();
  // Called when an operation starts (woken false), and when the engine
  // wakes it (woken true: from a microtask, where the handler may run at
  // once, as Node's `for await` resumes there).
  virtual void advance(bool woken) noexcept = 0;
  // Ends the operation: at once when woken, else from the next tick.
  void finish(bool woken, std::error_code ec, Value v) noexcept {
    if (woken)
      this->complete_now(ec, std::move(v));
    else
      this->complete(ec, std::move(v));
  }
  // The engine's next step; at `pending`, advance() is called again once
  // there may be more. The end and the error stay once met: every later
  // call gives them again.
  async_iterator::step pull() noexcept;

 private:
  std::shared_ptr<async_iterator> it_;
  std::error_code failure_;
  bool over_ = false;
};

}  // namespace detail

/// The chunks of a readable, one per co_await, until its 'end':
///
///     sluice::asio::chunks in(*readable);
///     while (auto chunk = co_await in.async_next(boost::asio::use_awaitable))
///       consume(*chunk);                 // a std::string, moved out of the stream
///     // here the stream has emitted 'end'
///
/// async_next() completes with nothing at the end (Node's: once finished()
/// says so, after 'close' for a stream that emits one), and throws a
/// sluice::stream_error on 'error' (and ERR_STREAM_PREMATURE_CLOSE on a
/// 'close' before 'end'). The twin async_next(ec, token) puts the error in
/// `ec` instead and completes with nothing. Any completion token works
/// (use_awaitable, a callback with signature void(std::exception_ptr,
/// std::optional<std::string>)); the handler runs on its executor (else the
/// io_context the stream's loop is attached to: see attach.h), never inside
/// async_next() or a stream event. One operation at a time.
///
/// Cost: no allocation per chunk beyond the stream's own (read() moves the
/// chunk out). Construct it before the stream has data ('readable' switches
/// it to paused mode); it must not outlive the stream. Differs from Node:
/// leaving the loop early does not destroy the stream (Node's iterator({
/// destroyOnReturn: false })), unless it failed and has auto_destroy.
class chunks final : public detail::readable_iteration<std::optional<std::string>> {
 public:
  explicit chunks(readable& r) : readable_iteration(r) {}

  template <class Token>
  auto async_next(Token&& token) {
    return detail::initiate<std::optional<std::string>, void(std::exception_ptr, std::optional<std::string>)>(
        *this, std::forward<Token>(token));
  }
  template <class Token>
  auto async_next(std::error_code& ec, Token&& token) {
    return detail::initiate<std::optional<std::string>, void(std::optional<std::string>)>(
        *this, ec, std::forward<Token>(token));
  }

  /// For the initiation (detail::initiate).
  template <class F>
  void start(F&& f);

 private:
  void advance(bool woken) noexcept override;
};

/// The lines of a readable, one per co_await, with line_splitter's rules
/// ("\n" or "\r\n" ends a line; a last line without one counts):
///
///     sluice::asio::lines in(*readable);
///     std::error_code ec;
///     while (auto line = co_await in.async_next(ec, boost::asio::use_awaitable))
///       count(*line);                    // a std::string_view
///     if (ec) report(ec);                // the stream's error, or ERR_SLUICE_LINE_TOO_LONG
///
/// A line is a view into the chunk (or, for a line that straddles chunks,
/// into the splitter's buffer), valid until the next async_next(). Otherwise
/// as chunks: async_next(token) throws, completion on the token's executor,
/// no allocation per line (a line inside a chunk is not copied).
class lines final : public detail::readable_iteration<std::optional<std::string_view>> {
 public:
  explicit lines(readable& r, const line_options& options = {})
      : readable_iteration(r), splitter_(options.max_line_length) {}

  template <class Token>
  auto async_next(Token&& token) {
    return detail::initiate<std::optional<std::string_view>,
                            void(std::exception_ptr, std::optional<std::string_view>)>(*this,
                                                                                      std::forward<Token>(token));
  }
  template <class Token>
  auto async_next(std::error_code& ec, Token&& token) {
    return detail::initiate<std::optional<std::string_view>, void(std::optional<std::string_view>)>(
        *this, ec, std::forward<Token>(token));
  }

  template <class F>
  void start(F&& f);

 private:
  void advance(bool woken) noexcept override;
  line_splitter splitter_;
  std::string chunk_;   // the chunk the splitter is on
  bool finished_ = false;  // the splitter's finish() was called, or the stream failed
  std::error_code final_;  // what every async_next() gives once finished_
};

}  // namespace sluice::asio

// ---- inline definitions (the asio layer is header-only, as Asio is: only
// the programs that use it compile and load Asio's code)

namespace sluice::asio {

namespace detail {

template <class Value>
readable_iteration<Value>::readable_iteration(readable& r)
    : operation<Value>(r.event_loop()), it_(async_iterator::create(r, {.destroy_on_return = false})) {}

template <class Value>
readable_iteration<Value>::~readable_iteration() {
  it_->close();
}

template <class Value>
async_iterator::step readable_iteration<Value>::pull() noexcept {
  if (over_) return {failure_ ? async_iterator::step::error : async_iterator::step::end, {}, failure_};
  async_iterator::step s = it_->next();
  switch (s.kind) {
    case async_iterator::step::chunk:
      break;
    case async_iterator::step::pending:
      it_->wait([this] { advance(true); });
      break;
    case async_iterator::step::error:
      failure_ = s.ec;
      over_ = true;
      break;
    case async_iterator::step::end:
      over_ = true;
      break;
  }
  return s;
}

}  // namespace detail

template <class F>
void chunks::start(F&& f) {
  arm(std::forward<F>(f));
  advance(false);
}

// Node: createAsyncIterator()'s loop: read() what is buffered; else the end,
// or the error, or wait for the engine to wake us.
inline void chunks::advance(bool woken) noexcept {
  if (!waiting()) return;
  async_iterator::step s = pull();
  if (s.kind == async_iterator::step::pending) return;
  if (s.kind == async_iterator::step::chunk) return finish(woken, {}, std::move(s.value));
  finish(woken, s.ec, std::nullopt);
}

template <class F>
void lines::start(F&& f) {
  arm(std::forward<F>(f));
  advance(false);
}

inline void lines::advance(bool woken) noexcept {
  if (!waiting()) return;
  std::error_code ec;
  for (;;) {
    if (finished_) return finish(woken, final_, std::nullopt);
    if (auto line = splitter_.next(ec)) return finish(woken, {}, line);
    if (ec) {
      finished_ = true;
      final_ = ec;
      return finish(woken, ec, std::nullopt);
    }
    async_iterator::step s = pull();
    switch (s.kind) {
      case async_iterator::step::pending:
        return;  // the engine calls again
      case async_iterator::step::chunk:
        chunk_ = std::move(s.value);
        splitter_.feed(chunk_);
        continue;
      case async_iterator::step::error:
        finished_ = true;
        final_ = s.ec;
        return finish(woken, s.ec, std::nullopt);
      case async_iterator::step::end: {
        finished_ = true;
        auto last = splitter_.finish(ec);
        final_ = ec;
        if (ec) return finish(woken, ec, std::nullopt);
        return finish(woken, {}, last);
      }
    }
  }
}

}  // namespace sluice::asio
