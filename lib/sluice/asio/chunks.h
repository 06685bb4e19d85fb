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
#include "sluice/loop/emitter.h"
#include "sluice/lines/line_splitter.h"
#include "sluice/stream/readable.h"

namespace sluice::asio {

namespace detail {

// What both iterations share: the readable's 'readable', 'end', 'error' and
// 'close' listeners (added once, so waiting allocates nothing) and where the
// stream stands. As Node's createAsyncIterator(): a 'readable' listener puts
// the stream in paused mode, and read() takes what is buffered.
template <class Value>
class readable_iteration : public operation<Value> {
 protected:
  explicit readable_iteration(readable& r);
  ~readable_iteration();
  // Called on each of the events, and when an operation starts.
  virtual void advance() noexcept = 0;
  // The error that ends the iteration, once it is known: the stream's
  // error, or ERR_STREAM_PREMATURE_CLOSE for a 'close' before 'end'.
  std::error_code failure() const noexcept { return error_; }
  bool ended() const noexcept { return ended_; }

  readable& stream_;

 private:
  listener_id on_readable_, on_end_, on_error_, on_close_;
  std::error_code error_;
  bool ended_ = false;
};

}  // namespace detail

/// The chunks of a readable, one per co_await, until its 'end':
///
///     sluice::asio::chunks in(*readable);
///     while (auto chunk = co_await in.async_next(boost::asio::use_awaitable))
///       consume(*chunk);                 // a std::string, moved out of the stream
///     // here the stream has emitted 'end'
///
/// async_next() completes with nothing at 'end', and throws a
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
/// leaving the loop early does not destroy the stream.
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
  void start(detail::pending<std::optional<std::string>> p) noexcept;

 private:
  void advance() noexcept override;
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

  void start(detail::pending<std::optional<std::string_view>> p) noexcept;

 private:
  void advance() noexcept override;
  line_splitter splitter_;
  std::string chunk_;   // the chunk the splitter is on
  bool finished_ = false;  // the splitter's finish() was called
};

}  // namespace sluice::asio

// ---- inline definitions (the asio layer is header-only, as Asio is: only
// the programs that use it compile and load Asio's code)

namespace sluice::asio {

namespace detail {

template <class Value>
readable_iteration<Value>::readable_iteration(readable& r) : operation<Value>(r.event_loop()), stream_(r) {
  on_readable_ = r.on(event::readable, [this] { advance(); });
  on_end_ = r.on(event::end, [this] {
    ended_ = true;
    advance();
  });
  on_error_ = r.on(event::error, [this](std::error_code ec) {
    if (!error_) error_ = ec;
    advance();
  });
  on_close_ = r.on(event::close, [this] {
    // Node: the iterator's eos() callback; a 'close' without 'end' is a
    // premature close, unless an error said why.
    if (!ended_ && !error_) error_ = make_error_code(errc::premature_close);
    advance();
  });
  // Ended or errored already (or destroyed): the events will not come again.
  if (r.readable_ended()) ended_ = true;
  if (!ended_ && !error_) {
    if (r.errored())
      error_ = r.errored();
    else if (r.destroyed())
      error_ = make_error_code(errc::premature_close);
  }
}

template <class Value>
readable_iteration<Value>::~readable_iteration() {
  stream_.off(event::readable, on_readable_);
  stream_.off(event::end, on_end_);
  stream_.off(event::error, on_error_);
  stream_.off(event::close, on_close_);
}

}  // namespace detail

inline void chunks::start(detail::pending<std::optional<std::string>> p) noexcept {
  arm(std::move(p));
  advance();
}

// Node: createAsyncIterator()'s loop: read() what is buffered; else the end,
// or the error, or wait for the next event.
inline void chunks::advance() noexcept {
  if (!waiting()) return;
  std::optional<std::string> chunk;
  if (!stream_.destroyed()) chunk = stream_.read();
  if (!chunk && !failure() && !ended()) return;  // 'readable', 'end' or 'error' calls again
  const std::error_code ec = chunk ? std::error_code{} : failure();
  complete(ec, std::move(chunk));
}

inline void lines::start(detail::pending<std::optional<std::string_view>> p) noexcept {
  arm(std::move(p));
  advance();
}

inline void lines::advance() noexcept {
  if (!waiting()) return;
  std::error_code ec;
  for (;;) {
    if (finished_) return complete(splitter_.failed() ? make_error_code(errc::line_too_long) : failure(), std::nullopt);
    if (auto line = splitter_.next(ec)) return complete({}, line);
    if (ec) {
      finished_ = true;
      return complete(ec, std::nullopt);
    }
    if (failure()) {
      finished_ = true;
      return complete(failure(), std::nullopt);
    }
    if (auto chunk = stream_.destroyed() ? std::nullopt : stream_.read()) {
      chunk_ = std::move(*chunk);
      splitter_.feed(chunk_);
      continue;
    }
    if (!ended()) return;  // 'readable' or 'end' will call again
    finished_ = true;
    auto last = splitter_.finish(ec);
    if (ec) return complete(ec, std::nullopt);
    if (last) return complete({}, last);
    return complete({}, std::nullopt);
  }
}

}  // namespace sluice::asio
