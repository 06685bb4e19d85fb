// write_done::take_callback() (sinks/sink.h): the sink takes the callback of
// the one request in flight. write_done is the writable's friend, so this
// stream-layer code may reach into the writable's queue.
#include "sluice/assert.h"
#include "sluice/stream/writable.h"

namespace sluice {

write_cb write_done::take_callback() const noexcept {
  SLUICE_ASSERT(w_->writing_.size() == 1 && w_->state_.has(detail::wflag::expect_write_cb));
  // Without the flag, on_write() completes the call as one without a
  // callback: no tick is spent on a callback that is no longer there.
  w_->state_.clear(detail::wflag::writecb);
  return std::move(w_->writing_.front().cb);
}

}  // namespace sluice
