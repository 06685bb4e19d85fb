// stream_ref, and Node's lib/internal/streams/utils.js predicates over it.
#include "sluice/stream/stream_ref.h"

namespace sluice {

namespace rf = detail::rflag;
namespace wf = detail::wflag;

stream_ref::stream_ref(readable& r) noexcept : r_(&r), w_(r.writable_side()) {}
stream_ref::stream_ref(writable& w) noexcept : r_(w.readable_side()), w_(&w) {}

void stream_ref::destroy(std::error_code err) const {
  if (w_)
    w_->destroy(err);  // a duplex's destroy is its writable side's
  else
    r_->destroy(err);
}

// Node: the `destroyed` property; a duplex's two sides agree.
bool stream_ref::destroyed() const noexcept {
  return (!r_ || r_->readable_state().has(rf::destroyed)) && (!w_ || w_->writable_state().has(wf::destroyed));
}

// Node: isReadableNodeStream(): a readable, or a duplex not made readable: false.
bool stream_ref::is_readable_node_stream() const noexcept {
  return r_ && !(w_ && r_->readable_state().has(rf::not_readable));
}

// Node: isWritableNodeStream().
bool stream_ref::is_writable_node_stream() const noexcept {
  return w_ && !(r_ && w_->writable_state().has(wf::not_writable));
}

// Node: isReadableFinished(stream, strict).
bool stream_ref::is_readable_finished(bool strict) const noexcept {
  if (!is_readable_node_stream() || r_->readable_state().has(rf::errored)) return false;
  return r_->readable_state().has(rf::end_emitted) || (!strict && r_->readable_state().has(rf::ended) && r_->readable_state().length == 0);
}

// Node: isWritableFinished(stream, strict).
bool stream_ref::is_writable_finished(bool strict) const noexcept {
  if (!is_writable_node_stream()) return false;
  if (w_->writable_state().has(wf::finished)) return true;  // writableFinished
  if (w_->writable_state().has(wf::errored)) return false;
  return !strict && w_->writable_state().has(wf::ended) && w_->writable_state().length == 0;
}

// Node: isWritableEnded().
bool stream_ref::is_writable_ended() const noexcept {
  if (!is_writable_node_stream()) return false;
  if (w_->writable_state().has(wf::ending)) return true;  // writableEnded
  if (w_->writable_state().has(wf::errored)) return false;
  return w_->writable_state().has(wf::ended);
}

// Node: isDestroyed(): stream.destroyed (both sides), or the writable side's
// state, else the readable's; the second covers the first.
bool stream_ref::is_destroyed() const noexcept {
  return w_ ? w_->writable_state().has(wf::destroyed) : r_->readable_state().has(rf::destroyed);
}

// Node: isReadable(). Null for a stream with no `readable` property (a writable).
std::optional<bool> stream_ref::is_readable() const noexcept {
  if (!r_) return std::nullopt;
  if (is_destroyed()) return false;
  return is_readable_node_stream() && r_->is_readable() && !is_readable_finished();
}

// Node: isWritable().
std::optional<bool> stream_ref::is_writable() const noexcept {
  if (!w_) return std::nullopt;
  if (is_destroyed()) return false;
  return is_writable_node_stream() && w_->is_writable() && !is_writable_ended();
}

// Node: isFinished(stream, opts).
bool stream_ref::is_finished(std::optional<bool> readable, std::optional<bool> writable) const noexcept {
  if (is_destroyed()) return true;
  if (readable != false && is_readable().value_or(false)) return false;
  if (writable != false && is_writable().value_or(false)) return false;
  return true;
}

// Node: isClosed(): the `closed` property, a readable's (and a duplex's) from
// its readable side.
bool stream_ref::is_closed() const noexcept {
  return r_ ? r_->readable_state().has(rf::closed) : w_->writable_state().has(wf::closed);
}

// Node: willEmitClose(): autoDestroy and emitClose, and not yet closed.
bool stream_ref::will_emit_close() const noexcept {
  const std::uint32_t flags = w_ ? w_->writable_state().flags : r_->readable_state().flags;
  return (flags & (rf::auto_destroy | rf::emit_close | rf::closed)) == (rf::auto_destroy | rf::emit_close);
}

std::error_code stream_ref::readable_errored() const noexcept { return r_ ? r_->readable::errored() : std::error_code{}; }
std::error_code stream_ref::writable_errored() const noexcept { return w_ ? w_->writable::errored() : std::error_code{}; }

bool stream_ref::error_emitted() const noexcept {
  return (w_ && w_->writable_state().has(wf::error_emitted)) || (r_ && r_->readable_state().has(rf::error_emitted));
}

std::size_t stream_ref::pending_cb() const noexcept { return w_ ? w_->writable_state().pending_cb : 0; }

}  // namespace sluice
