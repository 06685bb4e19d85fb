// writer: co_await a writable's room and its end, as Node programs await
// once(writable, 'drain') and finished().
#pragma once

// g++ 12 with C++20 coroutines: <utility> before any Asio header.
#include <utility>

#include <exception>
#include <string_view>
#include <system_error>

#include "sluice/asio/completion.h"
#include "sluice/loop/emitter.h"
#include "sluice/stream/writable.h"

namespace sluice::asio {

/// Awaits a writable's room and its end:
///
///     sluice::asio::writer out(*writable);
///     for (const auto& line : lines) {
///       out.stream().write(line);
///       co_await out.async_room(boost::asio::use_awaitable);  // at once below the mark, else at 'drain'
///     }
///     co_await out.async_end(boost::asio::use_awaitable);     // end(), then 'finish'
///
/// async_room() completes at once (on the handler's executor) while
/// write() would return true (writable_need_drain() is false), else at
/// 'drain'; async_end() calls end() (if not ended yet) and completes at
/// 'finish'. Both throw a sluice::stream_error if the stream fails ('error',
/// or ERR_STREAM_DESTROYED / ERR_STREAM_PREMATURE_CLOSE for a stream
/// destroyed without one); the twins with a std::error_code& put it there.
/// The handler never runs inside the call or inside a stream event. One
/// operation at a time; the writer must not outlive the stream. Its
/// listeners are added once: waiting allocates nothing.
class writer final : public detail::operation<detail::none> {
 public:
  explicit writer(writable& w);
  ~writer();

  writable& stream() const noexcept { return stream_; }

  template <class Token>
  auto async_room(Token&& token) {
    wants_end_ = false;
    return detail::initiate<detail::none, void(std::exception_ptr)>(*this, std::forward<Token>(token));
  }
  template <class Token>
  auto async_room(std::error_code& ec, Token&& token) {
    wants_end_ = false;
    return detail::initiate<detail::none, void()>(*this, ec, std::forward<Token>(token));
  }
  /// write(chunk), then async_room().
  template <class Token>
  auto async_write(std::string_view chunk, Token&& token) {
    stream_.write(chunk);
    return async_room(std::forward<Token>(token));
  }
  template <class Token>
  auto async_end(Token&& token) {
    wants_end_ = true;
    return detail::initiate<detail::none, void(std::exception_ptr)>(*this, std::forward<Token>(token));
  }
  template <class Token>
  auto async_end(std::error_code& ec, Token&& token) {
    wants_end_ = true;
    return detail::initiate<detail::none, void()>(*this, ec, std::forward<Token>(token));
  }

  /// For the initiation (detail::initiate).
  template <class F>
  void start(F&& f);

 private:
  void advance() noexcept;
  std::error_code failure() const noexcept;

  writable& stream_;
  listener_id on_drain_, on_finish_, on_error_, on_close_;
  std::error_code error_;
  bool wants_end_ = false;
  bool drained_ = false;   // 'drain' since the operation started
  bool finished_ = false;  // 'finish' seen
  bool closed_ = false;    // 'close' seen
};

// ---- inline definitions (header-only: see chunks.h)

inline writer::writer(writable& w) : operation(w.event_loop()), stream_(w) {
  on_drain_ = w.on(event::drain, [this] {
    drained_ = true;
    advance();
  });
  on_finish_ = w.on(event::finish, [this] {
    finished_ = true;
    advance();
  });
  on_error_ = w.on(event::error, [this](std::error_code ec) {
    if (!error_) error_ = ec;
    advance();
  });
  on_close_ = w.on(event::close, [this] {
    closed_ = true;
    advance();
  });
  finished_ = w.writable_finished();
}

inline writer::~writer() {
  stream_.off(event::drain, on_drain_);
  stream_.off(event::finish, on_finish_);
  stream_.off(event::error, on_error_);
  stream_.off(event::close, on_close_);
}

inline std::error_code writer::failure() const noexcept {
  if (error_) return error_;
  if (const std::error_code ec = stream_.errored()) return ec;
  if (finished_) return {};
  if (closed_) return make_error_code(errc::premature_close);
  if (stream_.destroyed()) return make_error_code(errc::destroyed);
  return {};
}

template <class F>
void writer::start(F&& f) {
  arm(std::forward<F>(f));
  drained_ = false;
  if (wants_end_ && !stream_.writable_ended() && !failure()) stream_.end();
  advance();
}

inline void writer::advance() noexcept {
  if (!waiting()) return;
  std::error_code ec = failure();
  if (!ec) {
    if (wants_end_ ? !finished_ : (stream_.writable_need_drain() && !drained_)) return;  // an event calls again
  }
  complete(ec, detail::none{});
}

}  // namespace sluice::asio
