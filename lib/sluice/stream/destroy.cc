// Node's lib/internal/streams/destroy.js, for readables, writables and
// duplexes alike. The common flag bits (errorEmitted ... errored) sit at the
// same positions in both state words, as in Node, so one function reads both.
#include "sluice/stream/destroy.h"

#include "sluice/stream/readable.h"
#include "sluice/stream/writable.h"

namespace sluice::detail {

namespace {
namespace common {
enum : std::uint32_t {
  error_emitted = rflag::error_emitted,
  auto_destroy = rflag::auto_destroy,
  emit_close = rflag::emit_close,
  destroyed = rflag::destroyed,
  closed = rflag::closed,
  close_emitted = rflag::close_emitted,
  errored = rflag::errored,
};
constexpr bool same_bit(std::uint32_t r, std::uint32_t w) { return r == w; }
static_assert(same_bit(rflag::error_emitted, wflag::error_emitted) && same_bit(rflag::auto_destroy, wflag::auto_destroy) &&
              same_bit(rflag::emit_close, wflag::emit_close) && same_bit(rflag::destroyed, wflag::destroyed) &&
              same_bit(rflag::closed, wflag::closed) && same_bit(rflag::close_emitted, wflag::close_emitted) &&
              same_bit(rflag::errored, wflag::errored));
}  // namespace common
}  // namespace

// The calls below reach the sides' private state as Node's destroy.js reaches
// `_readableState` and `_writableState`.
struct sides {
  readable* r;
  writable* w;

  bool any(std::uint32_t bit) const noexcept {
    return (w && w->state_.has(bit)) || (r && r->state_.has(bit));
  }
  void set(std::uint32_t bit) const noexcept {
    if (w) w->state_.set(bit);
    if (r) r->state_.set(bit);
  }
  emitter& events() const noexcept { return w ? static_cast<emitter&>(*w) : static_cast<emitter&>(*r); }
  void call_soon(task t) const {
    if (w)
      w->call_soon(std::move(t));
    else
      r->call_soon(std::move(t));
  }
};

void destroy_impl::check_error(readable* r, writable* w, std::error_code err) noexcept {
  if (!err) return;
  if (w && !w->state_.has(common::errored)) {
    w->errored_ = err;
    w->state_.set(common::errored);
  }
  if (r && !r->state_.has(common::errored)) {
    r->errored_ = err;
    r->state_.set(common::errored);
  }
}

void destroy_impl::destroy(readable* r, writable* w, std::error_code err) noexcept {
  const sides s{r, w};
  if (s.any(common::destroyed)) return;
  check_error(r, w, err);
  s.set(common::destroyed);

  // Node: _destroy(err, onDestroy). Differs from Node: a sink's and a
  // source's destroy are synchronous; they only release resources (close an
  // fd). A duplex's _destroy is its sink's and then its source's, each given
  // the error the one before returned.
  std::error_code e = err;
  if (w) e = w->sink_->destroy(e);
  if (r) e = r->source_->destroy(e);

  // Node: onDestroy(err).
  check_error(r, w, e);
  s.set(common::closed);
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
  s.set(common::close_emitted);
  if (s.any(common::emit_close)) s.events().emit(event::close);
}

void destroy_impl::emit_error_nt(readable* r, writable* w, std::error_code err) noexcept {
  const sides s{r, w};
  if (s.any(common::error_emitted)) return;
  s.set(common::error_emitted);
  event_arg arg;
  arg.error = err;
  s.events().emit(event::error, arg);
}

void destroy_impl::error_or_destroy(readable* r, writable* w, std::error_code err, bool is_sync) noexcept {
  const sides s{r, w};
  if (s.any(common::destroyed)) return;
  if (s.any(common::auto_destroy)) {
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

}  // namespace sluice::detail
