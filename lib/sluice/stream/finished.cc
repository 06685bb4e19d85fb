// Node's eos() (lib/internal/streams/end-of-stream.js), for sluice's streams,
// in Node's order: the flags, the listeners, then the checks for a stream
// that is done already.
#include "sluice/stream/finished.h"

#include <memory>

#include "sluice/base/errors.h"
#include "sluice/stream/abort_signal.h"

namespace sluice {

namespace {

// The closures of one eos() call: Node keeps them in the call's scope; here
// every listener of the call shares this object.
struct eos : std::enable_shared_from_this<eos> {
  eos(stream_ref s, finished_cb cb) : stream(s), callback(std::move(cb)) {}

  stream_ref stream;
  finished_cb callback;  // Node: once(callback); emptied once called or cleaned up
  bool readable = false, writable = false;
  bool will_emit_close = false;
  bool writable_finished = false, readable_finished = false;
  bool closed = false;
  listener_id on_end_id = 0, on_finish_id = 0, on_error_id = 0, on_close_id = 0;
  listener_id legacy_end_id = 0, legacy_close_id = 0;
  abort_registration abort_reg;  // Node: disposable, for options.signal

  void call(std::error_code ec) {
    abort_reg.dispose();
    if (!callback) return;
    finished_cb cb = std::move(callback);
    callback = {};
    cb(ec);
  }

  // Node: onfinish().
  void on_finish() {
    writable_finished = true;
    if (stream.destroyed()) will_emit_close = false;
    if (will_emit_close && (!stream.readable_side() || !stream.readable_side()->is_readable() || readable)) return;
    if (!readable || readable_finished) call({});
  }

  // Node: onend().
  void on_end() {
    readable_finished = true;
    if (stream.destroyed()) will_emit_close = false;
    if (will_emit_close && (!stream.writable_side() || !stream.writable_side()->is_writable() || writable)) return;
    if (!writable || writable_finished) call({});
  }

  // Node: onlegacyfinish(), for a stream without a writable side (whose
  // `writable` property Node reads as undefined): its 'end' or 'close' is
  // the finish that writable = true waits for.
  void on_legacy_finish() { on_finish(); }

  // Node: onclose().
  void on_close() {
    closed = true;
    std::error_code errored = stream.writable_errored();
    if (!errored) errored = stream.readable_errored();
    if (errored) return call(errored);
    if (readable && !readable_finished && stream.is_readable_node_stream()) {
      if (!stream.is_readable_finished(false)) return call(make_error_code(errc::premature_close));
    }
    if (writable && !writable_finished) {
      if (!stream.is_writable_finished(false)) return call(make_error_code(errc::premature_close));
    }
    call({});
  }

  // Node: onclosed().
  void on_closed() {
    closed = true;
    std::error_code errored = stream.writable_errored();
    if (!errored) errored = stream.readable_errored();
    if (errored) return call(errored);
    call({});
  }

  void next_tick(void (eos::*step)()) {
    stream.event_loop().next_tick([self = shared_from_this(), step] { (self.get()->*step)(); }, stream.owner());
  }

  // Node: abort(), for options.signal.
  void on_abort() {
    finished_cb cb = std::move(callback);  // kept: cleanup removes it
    cleanup();
    if (cb) cb(make_error_code(errc::aborted));
  }

  // Node: cleanup(). Node leaves the abort listener, calling a no-op; it
  // goes here.
  void cleanup() {
    callback = {};
    abort_reg.dispose();
    emitter& e = stream.events();
    e.off(event::finish, on_finish_id);
    e.off(event::end, on_end_id);
    if (on_error_id) e.off(event::error, on_error_id);
    e.off(event::close, on_close_id);
    if (legacy_end_id) e.off(event::end, legacy_end_id);
    if (legacy_close_id) e.off(event::close, legacy_close_id);
  }
};

}  // namespace

std::function<void()> finished(stream_ref stream, finished_cb cb, const finished_options& options) {
  auto st = std::make_shared<eos>(stream, std::move(cb));
  st->readable = options.readable.value_or(stream.is_readable_node_stream());
  st->writable = options.writable.value_or(stream.is_writable_node_stream());
  st->will_emit_close = stream.will_emit_close() && stream.is_readable_node_stream() == st->readable &&
                        stream.is_writable_node_stream() == st->writable;
  st->writable_finished = stream.is_writable_finished(false);
  st->readable_finished = stream.is_readable_finished(false);
  st->closed = stream.is_closed();

  // Node adds them with stream.on(): none of these changes a readable's mode.
  emitter& e = stream.events();
  // Node's "legacy streams" branch: a readable asked for writable = true has
  // no 'finish' to wait for. These run before on_end and on_close, as in Node,
  // so 'end' reports ok rather than waiting forever, and 'close' does not
  // report a premature close of a side that does not exist.
  if (st->writable && !stream.writable_side()) {
    st->legacy_end_id = e.on(event::end, [st] { st->on_legacy_finish(); });
    st->legacy_close_id = e.on(event::close, [st] { st->on_legacy_finish(); });
  }
  st->on_end_id = e.on(event::end, [st] { st->on_end(); });
  st->on_finish_id = e.on(event::finish, [st] { st->on_finish(); });
  if (options.error) st->on_error_id = e.on(event::error, [st](std::error_code err) { st->call(err); });
  st->on_close_id = e.on(event::close, [st] { st->on_close(); });

  if (st->closed) {
    st->next_tick(&eos::on_close);
  } else if (stream.error_emitted()) {
    if (!st->will_emit_close) st->next_tick(&eos::on_closed);
  } else if (!st->readable && (!st->will_emit_close || stream.is_readable().value_or(false)) &&
             (st->writable_finished || stream.is_writable() == false) && stream.pending_cb() == 0) {
    st->next_tick(&eos::on_closed);
  } else if (!st->writable && (!st->will_emit_close || stream.is_writable().value_or(false)) &&
             (st->readable_finished || stream.is_readable() == false)) {
    st->next_tick(&eos::on_closed);
  }

  if (options.signal.stop_requested() && !st->closed) {
    st->next_tick(&eos::on_abort);
  } else if (options.signal.stop_possible() && !st->closed) {
    // A weak_ptr: the registration is ours, and goes with the listeners.
    st->abort_reg = add_abort_listener(options.signal, stream.event_loop(), [w = std::weak_ptr(st)] {
      if (auto s = w.lock()) s->on_abort();
    });
  }

  return [st] { st->cleanup(); };
}

}  // namespace sluice
