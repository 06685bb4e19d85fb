// Node's Duplex constructor (lib/internal/streams/duplex.js). The behaviour
// that depends on the other side lives where Node has it: the readable's
// endReadableNT(), the writable's finish() and onwrite(), and destroy.cc.
#include "sluice/stream/duplex.h"

namespace sluice {

namespace {
readable_options readable_options_of(const duplex_options& o) {
  readable_options r;
  r.high_water_mark = o.high_water_mark ? o.high_water_mark : o.readable_high_water_mark;
  r.object_mode = o.object_mode || o.readable_object_mode;
  r.auto_destroy = o.auto_destroy;
  r.emit_close = o.emit_close;
  r.event_loop = o.event_loop;
  return r;
}
writable_options writable_options_of(const duplex_options& o) {
  writable_options w;
  w.high_water_mark = o.high_water_mark ? o.high_water_mark : o.writable_high_water_mark;
  w.object_mode = o.object_mode || o.writable_object_mode;
  w.auto_destroy = o.auto_destroy;
  w.emit_close = o.emit_close;
  w.event_loop = o.event_loop;
  return w;
}
}  // namespace

duplex::duplex(std::unique_ptr<source> src, std::unique_ptr<sink> snk, const duplex_options& options)
    : duplex(std::move(src), std::move(snk), readable_options_of(options), writable_options_of(options),
             options.allow_half_open) {
  if (!options.readable) readable::state_.set(detail::rflag::not_readable | detail::rflag::ended | detail::rflag::end_emitted);
  if (!options.writable)
    writable::state_.set(detail::wflag::not_writable | detail::wflag::ending | detail::wflag::ended |
                         detail::wflag::finished);
}

duplex::duplex(std::unique_ptr<source> src, std::unique_ptr<sink> snk, const readable_options& r,
               const writable_options& w, bool allow_half_open)
    : readable(std::move(src), r), writable(std::move(snk), w) {
  readable::writable_side_ = this;
  writable::readable_side_ = this;
  allow_half_open_ = allow_half_open;
}

// The writable side goes first (its destructor pays owed callbacks), then the
// readable side; neither emits. Both destroy their half if the stream was not.
duplex::~duplex() = default;

// Both sides move: each side's destructor drops its deferred work on its loop.
void duplex::rehome(loop& l) noexcept {
  writable::rehome(l);
  readable::rehome(l);
}

duplex& duplex::destroy(std::error_code err) {
  writable::destroy(err);
  return *this;
}

}  // namespace sluice
