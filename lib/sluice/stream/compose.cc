// compose(): Node's compose() (lib/internal/streams/compose.js) and, for one
// stream, Duplex.from(stream)'s _duplexify (duplexify.js): a duplex whose
// _write, _final, _read and _destroy are a sink and a source that forward
// to the head and the tail of a pipeline.
#include "sluice/stream/compose.h"

#include <optional>

#include "sluice/base/errors.h"
#include "sluice/stream/abort_signal.h"
#include "sluice/stream/finished.h"
#include "sluice/stream/pipeline.h"

namespace sluice {

namespace {

class compose_source;

// The closures of one compose() call, shared by the composite's sink and
// source and by the listeners on the chain's streams, which outlive the
// composite: each checks that what it reaches is still there.
struct compose_state {
  duplex* d = nullptr;               // Node: d; null once the composite is gone
  compose_source* source = nullptr;  // the composite's _read; null once gone
  writable* head = nullptr;          // s1's writable side, if the composite is writable
  readable* tail = nullptr;          // sN's readable side, if the composite is readable
  // What d._destroy destroys: sN (compose), or the one stream
  // (_duplexify's destroyer(w) and destroyer(r)).
  std::optional<stream_ref> tail_ref;
  bool single = false;  // one stream: _duplexify's rules
  bool is_readable = false;  // Node: readable, the composite's
  bool is_writable = false;  // Node: writable

  std::optional<write_done> ondrain;   // Node: ondrain, the write waiting for s1's 'drain'
  std::optional<final_done> onfinish;  // Node: onfinish, _final waiting for the chain's end
  bool onreadable = false;             // Node: onreadable, _read waiting for sN's 'readable'
  // Node: onclose, which is undefined while the pipeline runs, null once it
  // is done, and the destroy callback while a destroy waits for it.
  enum class close_state { running, done, destroy_waiting } onclose = close_state::running;
  std::optional<destroy_done> destroy_callback;  // onclose's callback, while destroy_waiting

  void on_finished(std::error_code err);
  void destroy(std::error_code err, destroy_done callback);
  void on_drain();
  void on_chain_finished();
  void on_tail_readable();
  void on_tail_end();
};

// Node: destroyImpl.destroyer(stream, err): an AbortError for a stream
// destroyed before it finished without a reason.
void destroyer(const stream_ref& s, std::error_code err) {
  if (s.is_destroyed()) return;
  if (!err && !s.is_finished(std::nullopt, std::nullopt)) err = make_error_code(errc::aborted);
  s.destroy(err);
}

// The composite's writable half: d._write, d._final and d._destroy.
class compose_sink final : public sink {
 public:
  explicit compose_sink(std::shared_ptr<compose_state> s) : sink({.final = true}), s_(std::move(s)) {}
  ~compose_sink() override {
    // A completion held for the composite must not outlive it.
    s_->ondrain.reset();
    s_->onfinish.reset();
    s_->destroy_callback.reset();
    s_->d = nullptr;
  }

  // Node: d._write: done at once while s1 takes more, else at s1's 'drain'.
  void write(std::string_view chunk, write_done done) override {
    if (s_->head->write(chunk))
      done();
    else
      s_->ondrain = done;
  }

  // Node: d._final: ends s1; done once the chain has finished.
  void final(final_done done) override {
    s_->head->end();
    s_->onfinish = done;
  }

  // Node: d._destroy(err, callback) (a duplex's one _destroy; the source's
  // passes the error on), whose callback may wait for the chain.
  // The composite deleted before it was destroyed calls it too, with a
  // `done` that waits for nothing: the chain is taken down all the same.
  void destroy(std::error_code err, destroy_done done) noexcept override { s_->destroy(err, std::move(done)); }

 private:
  std::shared_ptr<compose_state> s_;
};

// The composite's readable half: d._read.
class compose_source final : public source {
 public:
  explicit compose_source(std::shared_ptr<compose_state> s) : s_(std::move(s)) { s_->source = this; }
  ~compose_source() override { s_->source = nullptr; }

  // Node: d._read: moves what sN has into the composite until it is full,
  // then waits for sN's next 'readable' when sN has nothing.
  void read(std::size_t) override {
    while (true) {
      std::optional<std::string> buf = s_->tail->read();
      if (!buf) {
        s_->onreadable = true;
        return;
      }
      if (!push(std::move(*buf))) return;
    }
  }

 private:
  std::shared_ptr<compose_state> s_;
};

// Node: onfinished(err), the pipeline's callback (and eos's, for one
// stream): a waiting destroy completes with its error. A composite neither
// readable nor writable has nothing left once the chain is done.
void compose_state::on_finished(std::error_code err) {
  onclose = close_state::done;
  if (destroy_callback) {
    const destroy_done cb = std::move(*destroy_callback);
    destroy_callback.reset();
    cb(err);
    return;
  }
  if (!d) return;
  if (err)
    d->destroy(err);
  else if (!single && !is_readable && !is_writable)
    d->destroy();
}

// Node: d._destroy(err, callback). sN (compose) or the one stream
// (_duplexify, while it runs) is destroyed with the error, an AbortError
// when there is none; the pipeline takes the others down, and the
// composite's destroy completes at the pipeline's callback, with its error.
void compose_state::destroy(std::error_code err, destroy_done callback) {
  if (!err && onclose != close_state::done) err = make_error_code(errc::aborted);
  onreadable = false;
  ondrain.reset();
  onfinish.reset();
  if (!single || onclose != close_state::done) destroyer(*tail_ref, err);
  if (onclose == close_state::done) {
    callback(err);
    return;
  }
  onclose = close_state::destroy_waiting;
  destroy_callback = std::move(callback);
}

// Node: head.on('drain'): the write that s1 refused is done.
void compose_state::on_drain() {
  if (ondrain) {
    const write_done cb = *ondrain;
    ondrain.reset();
    cb();
  }
}

// Node: eos(tail) (compose) or w.on('finish') (one stream): _final is done.
void compose_state::on_chain_finished() {
  if (onfinish) {
    const final_done cb = *onfinish;
    onfinish.reset();
    cb();
  }
}

// Node: tail.on('readable'): a waiting _read goes on.
void compose_state::on_tail_readable() {
  if (onreadable && source) {
    onreadable = false;
    source->read(0);
  }
}

// Node: tail.on('end', () => d.push(null)).
void compose_state::on_tail_end() {
  if (d) d->push_eof();
}

// Node: _duplexify({readable: r, writable: w}) for the one stream `s`.
void wire_single(const std::shared_ptr<compose_state>& st, const stream_ref& s) {
  if (st->is_writable) {
    // Node: eos(w, ...): a failed writable side takes the readable one down.
    finished_options wo;
    wo.readable = false;
    wo.writable = true;
    finished(stream_ref(*s.writable_side()), [st, s](std::error_code err) {
      st->is_writable = false;
      if (err && s.readable_side()) destroyer(stream_ref(*s.readable_side()), err);
      st->on_finished(err);
    }, wo);
    s.writable_side()->on(event::drain, [st] { st->on_drain(); });
    s.writable_side()->on(event::finish, [st] { st->on_chain_finished(); });
  }
  if (st->is_readable) {
    finished_options ro;
    ro.readable = true;
    ro.writable = false;
    finished(stream_ref(*s.readable_side()), [st, s](std::error_code err) {
      st->is_readable = false;
      if (err) destroyer(stream_ref(*s.readable_side()), err);
      st->on_finished(err);
    }, ro);
  }
}

}  // namespace

std::unique_ptr<duplex> compose(std::initializer_list<stream_ref> streams, const compose_options& options) {
  return compose(std::vector<stream_ref>(streams), options);
}

// Node: compose(...streams).
std::unique_ptr<duplex> compose(const std::vector<stream_ref>& streams, const compose_options& options) {
  if (streams.empty()) throw stream_error(make_error_code(errc::missing_args));
  const bool single = streams.size() == 1;
  if (!single) {
    for (std::size_t n = 0; n < streams.size(); ++n) {
      if (n + 1 < streams.size() && !streams[n].is_readable().value_or(false))
        throw stream_error(make_error_code(errc::compose_not_readable));
      if (n > 0 && !streams[n].is_writable().value_or(false))
        throw stream_error(make_error_code(errc::compose_not_writable));
    }
  }

  auto st = std::make_shared<compose_state>();
  st->single = single;
  const stream_ref head = streams.front();
  const stream_ref tail = streams.back();

  // Node pipelines before it looks at the ends; nothing of the wiring
  // changes whether they are readable or writable.
  if (!single) pipeline(streams, [st](std::error_code err) { st->on_finished(err); });

  // Node: isWritable(head), isReadable(tail); for one stream, _duplexify's
  // isReadable(r) and isWritable(w) of a readable or a writable stream.
  st->is_writable = head.is_writable().value_or(false) && (!single || head.is_writable_node_stream());
  st->is_readable = tail.is_readable().value_or(false) && (!single || tail.is_readable_node_stream());
  if (st->is_writable) st->head = head.writable_side();
  if (st->is_readable) st->tail = tail.readable_side();
  if (single) {
    // Node: destroyer(w, err); destroyer(r, err): one stream, destroyed once.
    st->tail_ref = head;
  } else {
    st->tail_ref = tail;
  }

  duplex_options o;
  o.writable_object_mode = head.writable_side() && head.writable_side()->writable_object_mode();
  o.readable_object_mode = tail.readable_side() && tail.readable_side()->readable_object_mode();
  o.writable = st->is_writable;
  o.readable = st->is_readable;
  o.event_loop = &head.event_loop();
  auto d = std::make_unique<duplex>(std::make_unique<compose_source>(st), std::make_unique<compose_sink>(st), o);
  st->d = d.get();

  if (single) {
    wire_single(st, head);
  } else if (st->is_writable) {
    st->head->on(event::drain, [st] { st->on_drain(); });
  }
  if (!single && st->is_writable) finished(tail, [st](std::error_code) { st->on_chain_finished(); });
  if (st->is_readable) {
    st->tail->on(event::readable, [st] { st->on_tail_readable(); });
    st->tail->on(event::end, [st] { st->on_tail_end(); });
  }

  // Node: readable.compose(stream, { signal }): addAbortSignal on the result.
  add_abort_signal(options.signal, *d);
  return d;
}

}  // namespace sluice
