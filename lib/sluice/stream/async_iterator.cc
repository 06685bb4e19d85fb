// Node's createAsyncIterator() (lib/internal/streams/readable.js), its
// closures turned into members: `next` is wake(), eos's callback sets the
// state, the loop body is next(), the `finally` is close().
#include "sluice/stream/async_iterator.h"

#include <utility>

#include "sluice/base/errors.h"
#include "sluice/stream/finished.h"
#include "sluice/stream/stream_ref.h"
#include "sluice/stream/writable.h"

namespace sluice {

std::shared_ptr<async_iterator> async_iterator::create(readable& r, const iterator_options& options) {
  auto it = std::make_shared<async_iterator>(r, options);
  std::weak_ptr<async_iterator> weak = it;
  // Node: stream.on('readable', next).
  it->readable_listener_ = r.on(event::readable, [weak] {
    if (auto self = weak.lock()) self->wake();
  });
  // Node: eos(stream, { writable: false }, ...): the end, or the error.
  finished_options fo;
  fo.writable = false;
  it->cleanup_ = finished(stream_ref(r), [weak](std::error_code ec) {
    if (auto self = weak.lock()) {
      self->state_ = ec ? state::errored : state::ended;
      self->error_ = ec;
      self->wake();
    }
  }, fo);
  return it;
}

async_iterator::async_iterator(readable& r, const iterator_options& options)
    : r_(r), loop_(r.event_loop()), options_(options) {}

// The listeners hold weak references; a wake-up on its way holds `this`.
async_iterator::~async_iterator() { loop_.cancel(this); }

async_iterator::step async_iterator::next() {
  if (closed_) return {step::end, {}, {}};
  std::optional<std::string> c;
  if (!r_.destroyed()) c = r_.read();
  if (c) return {step::chunk, std::move(*c), {}};
  if (state_ == state::errored) {
    close();
    return {step::error, {}, error_};
  }
  if (state_ == state::ended) {
    close();
    return {step::end, {}, {}};
  }
  return {step::pending, {}, {}};
}

void async_iterator::wait(waiter_fn w) { waiter_ = std::move(w); }

// The loop resumes where Node's `await` would: in a microtask. The waiter
// waits in a member, so that waiting allocates nothing.
void async_iterator::wake() {
  if (!waiter_ || woken_) return;
  woken_ = std::move(waiter_);
  waiter_ = nullptr;
  loop_.queue_microtask([this] {
    auto w = std::move(woken_);
    woken_ = nullptr;
    w();
  }, this);
}

void async_iterator::after_await(waiter_fn f) {
  auto w = std::make_shared<waiter_fn>(std::move(f));
  loop_.queue_microtask([w] { (*w)(); }, this);
}

// Node: the `finally`, `(error || destroyOnReturn !== false) && (error ===
// undefined || autoDestroy)`: destroyer(), whose error is an AbortError
// when the stream is not finished (Node's isFinished()); else
// stream.off('readable', next) and eos's cleanup().
void async_iterator::close() noexcept {
  if (closed_) return;
  closed_ = true;
  waiter_ = nullptr;
  woken_ = nullptr;
  loop_.cancel(this);  // a wake-up on its way
  auto keep = shared_from_this();  // the listeners below may hold the last reference
  const bool failed = state_ == state::errored;
  const bool destroy = (failed || options_.destroy_on_return) &&
                       (state_ == state::running || r_.readable_state().has(detail::rflag::auto_destroy));
  if (destroy) {
    // Node leaves its listeners on a stream it destroys: 'readable' stays
    // (taking it off would reset readableFlowing), and so does eos's,
    // which takes the AbortError the destroy emits (no unhandled 'error').
    // Both find the iterator closed, and call nothing here.
    if (!r_.destroyed()) r_.destroy(is_finished() ? std::error_code{} : make_error_code(errc::aborted));
  } else {
    r_.off(event::readable, readable_listener_);
    if (cleanup_) {
      auto c = std::move(cleanup_);
      cleanup_ = nullptr;
      c();
    }
  }
}

// Node: isFinished(stream): neither side can still be read or written.
bool async_iterator::is_finished() const noexcept {
  if (r_.is_readable()) return false;
  const auto* w = dynamic_cast<const writable*>(&r_);
  return !(w && w->is_writable());
}

}  // namespace sluice
