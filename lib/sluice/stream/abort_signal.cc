// Node's addAbortListener() and addAbortSignal(), for a std::stop_token.
#include "sluice/stream/abort_signal.h"

#include <atomic>
#include <optional>
#include <thread>

#include "sluice/errors.h"
#include "sluice/stream/finished.h"

namespace sluice {

// One registration. Lives while its owner holds the abort_registration; a
// task posted from another thread holds only a weak_ptr, so it finds the
// registration gone rather than touching a stream deleted since.
struct abort_registration::state : std::enable_shared_from_this<state> {
  struct on_stop {
    state* self;
    void operator()() const noexcept { self->stopped(); }
  };

  loop* home = nullptr;
  std::thread::id home_thread;
  task listener;
  std::atomic<bool> armed{false};  // false while the stop_callback is being made
  // Last, so that it goes first: ~stop_callback waits for a callback running
  // on another thread, which still reads `home` and weak_from_this().
  std::optional<std::stop_callback<on_stop>> callback;

  ~state() { callback.reset(); }

  // Node: the 'abort' event's listener, once.
  void fire() {
    task t = std::move(listener);
    listener = {};
    if (t) t();
  }

  // On the thread that called request_stop().
  void stopped() noexcept {
    if (armed && std::this_thread::get_id() == home_thread) {
      auto keep = shared_from_this();  // the listener may dispose of us
      keep->fire();
      return;
    }
    home->post([w = weak_from_this()] {
      if (auto s = w.lock()) s->fire();
    });
  }
};

abort_registration add_abort_listener(std::stop_token token, loop& l, task listener) {
  abort_registration r;
  if (!token.stop_possible() && !token.stop_requested()) return r;
  auto s = std::make_shared<abort_registration::state>();
  s->home = &l;
  s->home_thread = std::this_thread::get_id();
  s->listener = std::move(listener);
  r.state_ = s;
  if (token.stop_requested()) {
    // Node: queueMicrotask(() => listener()); a disposed registration never calls it.
    l.queue_microtask([w = std::weak_ptr(s)] {
      if (auto s = w.lock()) s->fire();
    });
    return r;
  }
  s->callback.emplace(std::move(token), abort_registration::state::on_stop{s.get()});
  s->armed = true;
  return r;
}

void add_abort_signal(std::stop_token token, stream_ref stream) {
  // Node: onAbort, stream.destroy(new AbortError(undefined, { cause: signal.reason })).
  auto on_abort = [stream] { stream.destroy(make_error_code(errc::aborted)); };
  if (token.stop_requested()) {
    on_abort();
    return;
  }
  if (!token.stop_possible()) return;
  // Node: eos(stream, disposable[SymbolDispose]). The registration lives in
  // finished()'s listeners: it goes when they run, or with the stream.
  auto reg = std::make_shared<abort_registration>(add_abort_listener(std::move(token), stream.event_loop(), on_abort));
  finished(stream, [reg](std::error_code) { reg->dispose(); });
}

}  // namespace sluice
