// Node v20's AbortSignal for streams, as a std::stop_token: stream.addAbortSignal
// (lib/internal/streams/add-abort-signal.js) and events.addAbortListener
// (lib/internal/events/abort_listener.js), which pipeline() and finished()
// use for their `signal` option.
#pragma once

#include <memory>
#include <stop_token>

#include "sluice/base/function.h"
#include "sluice/loop/loop.h"
#include "sluice/stream/stream_ref.h"

namespace sluice {

/// The registration add_abort_listener() returns (Node's disposable): the
/// listener is never called once this is reset or destroyed.
class abort_registration {
 public:
  abort_registration() = default;
  /// Node: disposable[Symbol.dispose](). Idempotent.
  void dispose() noexcept { state_.reset(); }
  explicit operator bool() const noexcept { return state_ != nullptr; }

  struct state;

 private:
  friend abort_registration add_abort_listener(std::stop_token, loop&, task);
  std::shared_ptr<state> state_;
};

/// Node: events.addAbortListener(signal, listener), for a token. `listener`
/// runs once, on `l`'s thread: at once if request_stop() is called on that
/// thread (Node's abort() dispatches synchronously), else posted to `l`
/// (loop::post()) and run there as a tick, so a stream is never touched from
/// the stopping thread. A token already stopped runs it as a microtask
/// (Node: queueMicrotask). The listeners of one token on one loop run in the
/// order they were added, as an AbortSignal's do. Call on `l`'s thread; `l`
/// must outlive the registration.
[[nodiscard]] abort_registration add_abort_listener(std::stop_token token, loop& l, task listener);

/// Node: stream.addAbortSignal(signal, stream). When `token` is stopped, the
/// stream is destroyed with an AbortError (errc::aborted, code ABORT_ERR). A
/// token already stopped destroys it at once, before this returns (as Node
/// does). The registration goes when the stream is finished or closed, and
/// with the stream if it is deleted first. A token that cannot be stopped
/// (std::stop_token{}) does nothing.
void add_abort_signal(std::stop_token token, stream_ref stream);

}  // namespace sluice
