#include "trace_run.h"

#include <memory>
#include <sstream>
#include <string_view>
#include <utility>

namespace sluice_trace {

std::string what(const std::error_code& ec) { return ec ? sluice::code_name(ec) : "ok"; }

namespace {

// What the recorded sink, source and transformer share: the trace they
// print to, the name of their stream, its options and its pending calls.
struct recorder {
  trace_run& run;
  std::string name;
  stream_options opts;
  std::deque<pending_call>& pending;

  // "CALL NAME" and "CALL NAME ARG".
  void print(const char* call) const { run.emit(call + (" " + name)); }
  void print(const char* call, std::string_view arg) const {
    run.emit(call + (" " + name + " ").append(arg));
  }
};

// The recorded sink of SCENARIOS.md: prints each call, then completes it at
// once (sync) or leaves it pending until `complete`.
class recording_sink final : public sluice::sink {
 public:
  // Node's _writev and _final defined or not, as the scenario says.
  explicit recording_sink(recorder r) : sink({.writev = r.opts.writev, .final = r.opts.final}), r_(std::move(r)) {}

  void write(std::string_view chunk, sluice::write_done done) override {
    r_.print("_write", chunk);
    settle(done);
  }
  void writev(const sluice::write_batch& batch, sluice::write_done done) override {
    std::string chunks;
    for (std::string_view c : batch) {
      if (!chunks.empty()) chunks += ',';
      chunks.append(c);
    }
    r_.print("_writev", chunks);
    settle(done);
  }
  void final(sluice::final_done done) override {
    r_.print("_final");
    settle(done);
  }
  // Extension (API.md): `destroy`: Node's _destroy(err, cb), printed, whose
  // cb waits in the same queue; `complete` passes the destroy's error on
  // (cb(err)), `complete error=MSG` gives its own.
  // Without it, no _destroy: done at once with the error.
  void destroy(std::error_code err, sluice::destroy_done done) noexcept override {
    if (!r_.opts.destroy) {
      done(err);
      return;
    }
    if (err)
      r_.print("_destroy", what(err));
    else
      r_.print("_destroy");
    if (r_.opts.sync) {
      done(err);
      return;
    }
    auto held = std::make_shared<sluice::destroy_done>(std::move(done));
    r_.pending.push_back([held, err](std::error_code ec) { (*held)(ec ? ec : err); });
  }

 private:
  template <class Done>
  void settle(Done done) {
    if (r_.opts.sync)
      done();
    else
      r_.pending.push_back([done](std::error_code ec) mutable { done(ec); });
  }
  recorder r_;
};

// The recorded source of SCENARIOS.md: prints each _read and pushes nothing;
// data only arrives through `push`.
class scenario_source final : public sluice::source {
 public:
  explicit scenario_source(recorder r) : r_(std::move(r)) {}
  void read(std::size_t) override { r_.print("_read"); }

 private:
  recorder r_;
};

// Extension: the transformer of `transform`: prints each _transform and
// _flush and calls back with the chunk upper-cased (with `FLUSH` for a
// flush), at once or, with `async`, at `complete`.
class scenario_transformer final : public sluice::transformer {
 public:
  explicit scenario_transformer(recorder r) : r_(std::move(r)) {}

  void transform(std::string_view chunk, sluice::transform_done done) override {
    r_.print("_transform", chunk);
    std::string data(chunk);
    for (char& c : data)
      if (c >= 'a' && c <= 'z') c = static_cast<char>(c - 'a' + 'A');
    settle(done, std::move(data));
  }
  void flush(sluice::transform_done done) override {
    r_.print("_flush");
    settle(done, "FLUSH");
  }
  bool has_flush() const noexcept override { return r_.opts.flush; }

 private:
  void settle(sluice::transform_done done, std::string data) {
    auto call = [done, data = std::move(data)](std::error_code ec) mutable {
      if (ec)
        done(ec);
      else
        done(std::move(data));
    };
    if (r_.opts.async)
      r_.pending.push_back(std::move(call));
    else
      call({});
  }
  recorder r_;
};

// Each of `events` prints "EVENT NAME"; 'error' prints its code too.
template <class Stream>
void print_events(trace_run& run, Stream& s, const std::string& name, std::initializer_list<sluice::event> events) {
  for (auto ev : events) s.on(ev, [&run, name, ev] { run.emit(std::string(sluice::to_string(ev)) + " " + name); });
  s.on(sluice::event::error, [&run, name](std::error_code ec) { run.emit("error " + name + " " + what(ec)); });
}

const char* boolean(bool v) { return v ? "true" : "false"; }

// `destroyed` is the stream's: a duplex's is both sides' (Node's Duplex getter).
std::string state_line(const std::string& name, sluice::writable& w, bool destroyed) {
  std::ostringstream s;
  s << "state " << name << " length=" << w.writable_length() << " needDrain=" << boolean(w.writable_need_drain())
    << " ended=" << boolean(w.writable_ended()) << " finished=" << boolean(w.writable_finished())
    << " corked=" << w.writable_corked() << " destroyed=" << boolean(destroyed)
    << " writable=" << boolean(w.is_writable());
  return s.str();
}

std::string state_line(const std::string& name, sluice::readable& r, bool destroyed) {
  const auto flowing = r.readable_flowing();
  std::ostringstream s;
  s << "state " << name << " length=" << r.readable_length()
    << " flowing=" << (flowing ? boolean(*flowing) : "null") << " ended=" << boolean(r.eof_pushed())
    << " endEmitted=" << boolean(r.readable_ended()) << " destroyed=" << boolean(destroyed)
    << " readable=" << boolean(r.is_readable());
  return s.str();
}

// The options every kind of stream has, from a creating command's.
template <class Options>
Options common_options(const stream_options& o) {
  Options r;
  r.high_water_mark = o.hwm;
  r.object_mode = o.object_mode;
  r.auto_destroy = !o.no_auto_destroy;
  r.emit_close = !o.no_emit_close;
  return r;
}

}  // namespace

sluice::stream_ref stream_entry::ref() {
  if (d) return sluice::stream_ref(*d);
  if (w) return sluice::stream_ref(*w);
  return sluice::stream_ref(*r);
}

void trace_run::add_writable(const std::string& name, const stream_options& o) {
  stream_entry& e = streams_[name];
  e.w = std::make_unique<sluice::writable>(std::make_unique<recording_sink>(recorder{*this, name, o, e.pending}),
                                           common_options<sluice::writable_options>(o));
  using sluice::event;
  print_events(*this, *e.w, name, {event::drain, event::finish, event::close, event::pipe, event::unpipe});
}

void trace_run::add_readable(const std::string& name, const stream_options& o) {
  stream_entry& e = streams_[name];
  e.r = std::make_unique<sluice::readable>(std::make_unique<scenario_source>(recorder{*this, name, o, e.pending}),
                                           common_options<sluice::readable_options>(o));
  using sluice::event;
  print_events(*this, *e.r, name, {event::end, event::close, event::pause, event::resume});
}

// Extension: the iterable is the chunks themselves (`range`), the one chunk
// (`string`), or a generator that prints `next R` at each pull and fails
// after its last chunk with `error=MSG`, as the oracle's does.
void trace_run::add_from(const std::string& name, const from_spec& f) {
  stream_entry& e = streams_[name];
  sluice::from_options fo;
  fo.high_water_mark = f.hwm;
  fo.object_mode = !f.bytes;
  fo.auto_destroy = !f.no_auto_destroy;
  fo.emit_close = !f.no_emit_close;
  if (f.string) {
    e.r = sluice::readable_from(f.chunks.at(0), fo);
  } else if (f.range) {
    e.r = sluice::readable_from(f.chunks, fo);
  } else if (f.async) {
    // The oracle's async iterator: a pull waits in `pending` for `settle`,
    // whose answer comes in a microtask, as the continuation of Node's
    // `await iterator.next()` does; the cancel hook is its return().
    e.async_from = true;
    auto next = std::make_shared<std::size_t>(0);
    e.r = sluice::readable_from_async(
        [this, name, chunks = f.chunks, error = f.error, next, &pending = e.pending](sluice::from_completion done) {
          emit("next " + name);
          pending.push_back([chunks, error, next, done](std::error_code) {
            sluice::loop::current().queue_microtask([chunks, error, next, done] {
              if (*next < chunks.size())
                done.item(chunks[(*next)++]);
              else if (error)
                done.error(sluice::user_error(*error));
              else
                done.end();
            });
          });
        },
        [this, name](std::error_code) { emit("return " + name); }, fo);
  } else {
    e.r = sluice::readable_from(
        [this, name, chunks = f.chunks, error = f.error,
         next = std::size_t{0}](std::error_code& ec) mutable -> std::optional<std::string> {
          emit("next " + name);
          if (next < chunks.size()) return chunks[next++];
          if (error) ec = sluice::user_error(*error);
          return std::nullopt;
        },
        fo);
  }
  using sluice::event;
  print_events(*this, *e.r, name, {event::end, event::close, event::pause, event::resume});
}

void trace_run::add_made_readable(const std::string& name, std::unique_ptr<sluice::readable> r) {
  stream_entry& e = streams_[name];
  e.r = std::move(r);
  using sluice::event;
  print_events(*this, *e.r, name, {event::end, event::close, event::pause, event::resume});
}

void trace_run::add_made_duplex(const std::string& name, std::unique_ptr<sluice::duplex> d) {
  stream_entry& e = streams_[name];
  e.d = std::move(d);
  using sluice::event;
  print_events(*this, *e.d, name,
               {event::drain, event::finish, event::end, event::close, event::pipe, event::unpipe, event::pause,
                event::resume});
}

// Extension: duplexpair A B: both sides print a duplex's events.
void trace_run::add_duplex_pair(const std::string& a, const std::string& b, const stream_options& o) {
  auto dop = common_options<sluice::duplex_options>(o);
  dop.allow_half_open = !o.no_half_open;
  auto [da, db] = sluice::duplex_pair(dop);
  streams_[a].d = std::move(da);
  streams_[b].d = std::move(db);
  using sluice::event;
  for (const std::string* name : {&a, &b})
    print_events(*this, *streams_[*name].d, *name,
                 {event::drain, event::finish, event::end, event::close, event::pipe, event::unpipe, event::pause,
                  event::resume});
}

void trace_run::add_duplex(const std::string& name, duplex_kind k, const stream_options& o) {
  stream_entry& e = streams_[name];
  auto dop = common_options<sluice::duplex_options>(o);
  dop.allow_half_open = !o.no_half_open;
  dop.readable = !o.no_readable;
  dop.writable = !o.no_writable;
  switch (k) {
    case duplex_kind::duplex:
      e.d = std::make_shared<sluice::duplex>(std::make_unique<scenario_source>(recorder{*this, name, o, e.pending}),
                                             std::make_unique<recording_sink>(recorder{*this, name, o, e.pending}),
                                             dop);
      break;
    case duplex_kind::transform:
      e.d = std::make_shared<sluice::transform>(
          std::make_unique<scenario_transformer>(recorder{*this, name, o, e.pending}), dop);
      break;
    case duplex_kind::passthrough:
      e.d = std::make_shared<sluice::pass_through>(dop);
      break;
  }
  // One emitter: each event prints once.
  using sluice::event;
  print_events(*this, *e.d, name,
               {event::drain, event::finish, event::end, event::close, event::pipe, event::unpipe, event::pause,
                event::resume});
}

void trace_run::state(const std::string& name, stream_kind k) {
  stream_entry& e = (*this)[name];
  switch (k) {
    case stream_kind::duplex:
      // Extension: the writable side's line, then the readable side's.
      emit(state_line(name, e.writable(), e.d->destroyed()));
      emit(state_line(name, e.readable(), e.d->destroyed()));
      break;
    case stream_kind::writable:
      emit(state_line(name, *e.w, e.w->destroyed()));
      break;
    case stream_kind::readable:
      emit(state_line(name, *e.r, e.r->destroyed()));
      break;
  }
}

void trace_run::destroy_all() {
  for (auto& [name, e] : streams_) {
    if (e.d)
      e.d->destroy();
    else if (e.w)
      e.w->destroy();
    else if (e.r)
      e.r->destroy();
  }
}

}  // namespace sluice_trace
