// event_queue: Node's events.on(emitter, name): the events of an emitter as
// co_await in a loop, behind an O(1) queue.
#pragma once

// g++ 12 with C++20 coroutines: <utility> before any Asio header.
#include <utility>

#include <cstddef>
#include <exception>
#include <initializer_list>
#include <optional>
#include <string>
#include <system_error>
#include <vector>

#include "sluice/asio/completion.h"
#include "sluice/loop/emitter.h"
#include "sluice/loop/loop.h"

namespace sluice::asio {

/// Queues each `ev` an emitter emits, from construction on, and hands them
/// out one per co_await:
///
///     sluice::asio::event_queue data(*readable, sluice::event::data, {sluice::event::end});
///     while (auto arg = co_await data.async_next(boost::asio::use_awaitable))
///       consume(arg->chunk);           // valid until the next async_next()
///     // here 'end' was emitted, and every 'data' before it was handed out
///
/// As Node's events.on(): events that came before an 'error' are handed
/// out first, then async_next() throws it (a sluice::stream_error; the twin
/// async_next(ec, token) puts it in `ec`), unless `ev` is 'error' itself.
/// One of the `close` events ends the iteration (Node's `close` option),
/// after the events queued before it. The queue is a ring that grows by
/// doubling and never shrinks, and each slot keeps its chunk's buffer: once
/// warm, queueing and handing out allocate nothing, and nothing waits on a
/// timer or sleeps. The queue is unbounded (as Node's): pause the emitter if
/// it can outrun the consumer. `loop` is the loop whose io_context runs the
/// handlers (by default this thread's). Must not outlive the emitter.
class event_queue final : public detail::operation<std::optional<event_arg>> {
 public:
  event_queue(emitter& e, event ev, std::initializer_list<event> close = {}, loop& l = loop::current());
  ~event_queue();

  template <class Token>
  auto async_next(Token&& token) {
    return detail::initiate<std::optional<event_arg>, void(std::exception_ptr, std::optional<event_arg>)>(
        *this, std::forward<Token>(token));
  }
  template <class Token>
  auto async_next(std::error_code& ec, Token&& token) {
    return detail::initiate<std::optional<event_arg>, void(std::optional<event_arg>)>(*this, ec,
                                                                                     std::forward<Token>(token));
  }

  /// Events queued and not yet handed out.
  std::size_t size() const noexcept { return count_ - (held_ ? 1 : 0); }

  template <class F>
  void start(F&& f);

 private:
  struct slot {
    std::error_code error;
    std::string chunk;  // a copy: the emitted view dies with the emit
    void* source = nullptr;
  };
  void push(const event_arg& a);
  void advance() noexcept;

  emitter& emitter_;
  std::vector<listener_id> ids_;  // on ev, on error (unless ev is), on each close event
  std::vector<event> events_;
  std::vector<slot> ring_;  // size a power of two
  std::size_t head_ = 0;
  std::size_t count_ = 0;
  bool held_ = false;  // the head slot was handed out: its chunk is in use until the next call
  std::error_code error_;
  bool closed_ = false;
};

// ---- inline definitions (header-only: see chunks.h)

inline event_queue::event_queue(emitter& e, event ev, std::initializer_list<event> close, loop& l)
    : operation(l), emitter_(e) {
  events_.push_back(ev);
  ids_.push_back(e.on(ev, [this](const event_arg& a) {
    push(a);
    advance();
  }));
  if (ev != event::error) {
    events_.push_back(event::error);
    ids_.push_back(e.on(event::error, [this](std::error_code ec) {
      if (!error_) error_ = ec;
      advance();
    }));
  }
  for (event c : close) {
    events_.push_back(c);
    ids_.push_back(e.on(c, [this] {
      closed_ = true;
      advance();
    }));
  }
}

inline event_queue::~event_queue() {
  for (std::size_t i = 0; i < ids_.size(); ++i) emitter_.off(events_[i], ids_[i]);
}

inline void event_queue::push(const event_arg& a) {
  if (count_ == ring_.size()) {
    std::vector<slot> bigger(ring_.empty() ? 16 : ring_.size() * 2);
    for (std::size_t i = 0; i < count_; ++i) bigger[i] = std::move(ring_[(head_ + i) & (ring_.size() - 1)]);
    ring_ = std::move(bigger);
    head_ = 0;
  }
  slot& s = ring_[(head_ + count_) & (ring_.size() - 1)];
  s.error = a.error;
  s.chunk.assign(a.chunk);  // keeps the slot's capacity
  s.source = a.source;
  ++count_;
}

template <class F>
void event_queue::start(F&& f) {
  if (held_) {  // the event handed out last is done with now
    head_ = (head_ + 1) & (ring_.size() - 1);
    --count_;
    held_ = false;
  }
  arm(std::forward<F>(f));
  advance();
}

inline void event_queue::advance() noexcept {
  if (!waiting() || held_) return;
  std::optional<event_arg> arg;
  std::error_code ec;
  if (count_ > 0) {
    const slot& s = ring_[head_];
    arg.emplace();
    arg->error = s.error;
    arg->chunk = s.chunk;
    arg->source = s.source;
    held_ = true;
  } else if (error_) {
    ec = std::exchange(error_, {});
    closed_ = true;  // as Node's: an iteration that threw is over
  } else if (!closed_) {
    return;  // the next event calls again
  }
  complete(ec, std::move(arg));
}

}  // namespace sluice::asio
