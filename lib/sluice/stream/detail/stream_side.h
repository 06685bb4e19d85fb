// stream_side: one side of a stream, readable or writable, as Node's
// destroy.js sees it (a stream's _readableState or _writableState): the
// common state, the first error, the loop, the io's destroy, and the other
// side of a duplex. writable and readable derive from it; destroy.cc works
// on it, so neither side reaches into the other's private parts.
#pragma once

#include <system_error>
#include <utility>

#include "sluice/loop/loop.h"
#include "sluice/stream/detail/stream_state.h"

namespace sluice {
class readable;
class writable;
}  // namespace sluice

namespace sluice::detail {

struct destroy_impl;

class stream_side {
 public:
  stream_side(const stream_side&) = delete;
  stream_side& operator=(const stream_side&) = delete;

  /// The stream's sides: for a duplex both, which both sides agree on; for a
  /// plain stream this one and null.
  readable* readable_side() const noexcept { return readable_side_; }
  writable* writable_side() const noexcept { return writable_side_; }

 protected:
  stream_side(stream_state& state, loop& l) noexcept : common_(&state), loop_(&l) {}
  ~stream_side() = default;

  /// Node: process.nextTick(). Tagged with this side, so that drop_soon()
  /// drops what is still queued when the stream goes.
  void call_soon(task t) { loop_->next_tick(std::move(t), this); }
  void drop_soon() noexcept { loop_->cancel(this); }

  /// The side's part of Node's _destroy(): its sink's or its source's
  /// destroy, given the error so far; calls `done` once with the error to
  /// report, at once (a source's destroy, and most sinks') or later (a
  /// sink's destroy that completes after the call, compose()'s).
  virtual void destroy_io(std::error_code err, inline_function<void(std::error_code), 16> done) noexcept = 0;

  stream_state* common_;  // the side's state (writable_state or readable_state)
  std::error_code errored_;  // the first error, once sflag::errored is set
  loop* loop_;
  readable* readable_side_ = nullptr;
  writable* writable_side_ = nullptr;

 private:
  // Node's destroy.js: destroy(), errorOrDestroy() and the emitters, for
  // either side or both.
  friend struct destroy_impl;
};

}  // namespace sluice::detail
