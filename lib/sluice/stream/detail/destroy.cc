// Node's lib/internal/streams/destroy.js, for readables, writables and
// duplexes alike, over stream_side: the common flag bits (stream_state.h),
// the first error, and the sink's or source's destroy.
#include "sluice/stream/detail/destroy.h"

#include <initializer_list>

#include "sluice/stream/readable.h"
#include "sluice/stream/writable.h"

namespace sluice::detail {

// The one or two sides of a stream, as destroy.js sees `_readableState` and
// `_writableState`: the flag bits both have (sflag) are read and set on both.
struct destroy_impl::sides {
  readable* r;
  writable* w;

  stream_side* first() const noexcept { return w ? static_cast<stream_side*>(w) : static_cast<stream_side*>(r); }
  static stream_side* side(readable* x) noexcept { return x; }
  static stream_side* side(writable* x) noexcept { return x; }
  bool any(std::uint32_t bit) const noexcept {
    return (w && side(w)->common_->has(bit)) || (r && side(r)->common_->has(bit));
  }
  void set(std::uint32_t bit) const noexcept {
    if (w) side(w)->common_->set(bit);
    if (r) side(r)->common_->set(bit);
  }
  emitter& events() const noexcept { return w ? static_cast<emitter&>(*w) : static_cast<emitter&>(*r); }
  void call_soon(task t) const { first()->call_soon(std::move(t)); }
};

void destroy_impl::check_error(readable* r, writable* w, std::error_code err) noexcept {
  if (!err) return;
  if (w) w->close_run();  // an errored writable takes no write inline
  for (stream_side* x : {sides::side(w), sides::side(r)}) {
    if (x && !x->common_->has(sflag::errored)) {
      x->errored_ = err;
      x->common_->set(sflag::errored);
    }
  }
}

void destroy_impl::destroy(readable* r, writable* w, std::error_code err) noexcept {
  const sides s{r, w};
  if (s.any(sflag::destroyed)) return;
  check_error(r, w, err);
  s.set(sflag::destroyed);
  if (w) w->close_run();  // nor does a destroyed one

  // Node: _destroy(err, onDestroy). A duplex's _destroy is its sink's and
  // then its source's, each given the error the one before returned. A
  // sink's destroy may complete later (sink::destroy() calls its done
  // then): the source's, and onDestroy, then wait for it. Differs from
  // Node: a source's destroy is synchronous; it only releases resources
  // (closes an fd).
  if (w) {
    sides::side(w)->destroy_io(err, [r, w](std::error_code e) noexcept {
      if (r)
        sides::side(r)->destroy_io(e, [r, w](std::error_code e2) noexcept { on_destroy(r, w, e2); });
      else
        on_destroy(r, w, e);
    });
    return;
  }
  sides::side(r)->destroy_io(err, [r, w](std::error_code e) noexcept { on_destroy(r, w, e); });
}

// Node: onDestroy(err), once (a second call does nothing, as Node's
// `called` makes it).
void destroy_impl::on_destroy(readable* r, writable* w, std::error_code e) noexcept {
  const sides s{r, w};
  if (s.any(sflag::closed)) return;
  check_error(r, w, e);
  s.set(sflag::closed);
  if (e) {
    s.call_soon([r, w, e] {
      emit_error_nt(r, w, e);
      emit_close_nt(r, w);
    });
  } else {
    s.call_soon([r, w] { emit_close_nt(r, w); });
  }
}

void destroy_impl::emit_close_nt(readable* r, writable* w) noexcept {
  const sides s{r, w};
  s.set(sflag::close_emitted);
  if (s.any(sflag::emit_close)) s.events().emit(event::close);
}

void destroy_impl::emit_error_nt(readable* r, writable* w, std::error_code err) noexcept {
  const sides s{r, w};
  if (s.any(sflag::error_emitted)) return;
  s.set(sflag::error_emitted);
  event_arg arg;
  arg.error = err;
  s.events().emit(event::error, arg);
}

void destroy_impl::error_or_destroy(readable* r, writable* w, std::error_code err, bool is_sync) noexcept {
  const sides s{r, w};
  if (s.any(sflag::destroyed)) return;
  if (s.any(sflag::auto_destroy)) {
    // Node: stream.destroy(err), which for a duplex is Writable's destroy.
    if (w)
      w->destroy(err);
    else
      r->destroy(err);
  } else if (err) {
    check_error(r, w, err);
    if (is_sync)
      s.call_soon([r, w, err] { emit_error_nt(r, w, err); });
    else
      emit_error_nt(r, w, err);
  }
}

void destroy_impl::error_or_destroy(stream_side& side, std::error_code err, bool is_sync) noexcept {
  error_or_destroy(side.readable_side_, side.writable_side_, err, is_sync);
}

}  // namespace sluice::detail
