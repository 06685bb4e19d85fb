// The writable's part of sluice's shutdown guarantee (shutdown.h): what a
// stream does when its loop goes, or the program exits, while it still
// holds writes. Nothing here runs on the write path.
#include "sluice/stream/writable.h"

namespace sluice {

namespace wf = detail::wflag;

// sluice's own: writes what the stream still holds, blocking: the rest of
// the sink call in flight, then every buffered request (held for the turn,
// corked, or waiting behind that call), as one batch. The written requests
// move to landed_, whose callbacks the destructor pays with success; on a
// failure the stream has errored. The stream is left writing, so that the
// loop never starts another sink call: later writes wait in the buffer for
// the next call of this (the destructor's). No callback, no event.
void writable::write_pending_sync() noexcept {
  sync_sink* const sync = sink_->sync();
  if (state_.has(wf::destroyed | wf::errored) || !sync) return;
  std::error_code ec;
  if (!writing_.empty()) {
    ec = sync->drain_sync();
    // A call that failed partway: the requests written whole landed.
    if (ec) pool_.move_front(writing_, landed_, sync->landed_sync());
    (ec ? failed_ : landed_).splice_back(writing_);
  }
  if (!ec && !buffered_.empty()) {
    ec = sync->write_sync(write_batch(buffered_.closed()));
    if (ec)
      pool_.move_front(buffered_.closed(), landed_, sync->landed_sync());
    else
      landed_.splice_back(buffered_.closed());
  }
  state_.set(wf::writing);
  if (ec) {
    errored_ = ec;
    state_.set(wf::errored);
    close_run();  // see runs_allowed()
  }
}

// sluice's own: the stream's loop is going away (see shutdown.h).
void writable::rehome(loop& l) noexcept {
  loop_ = &l;
  sink_->attach(l);
  if (loop_close_.fn) l.add_close_hook(loop_close_);
}

// The close hook of the stream's loop: write what is held, then move to a
// loop that stays (shutdown.h).
void writable::on_loop_close(loop::close_hook& hook, loop&) noexcept {
  auto* w = static_cast<writable*>(hook.owner);
  w->write_pending_sync();
  if (loop* home = detail::shutdown_registry::orphan_loop()) w->rehome(*home);
}

void writable::on_exit(detail::shutdown_link& link) noexcept {
  static_cast<writable*>(link.owner)->write_pending_sync();
}

}  // namespace sluice
