// Node's pipelineImpl() and pipe() (lib/internal/streams/pipeline.js), and
// destroyer() (pipeline.js and destroy.js), for a pipeline of streams.
#include "sluice/stream/pipeline.h"

#include <deque>
#include <functional>
#include <memory>

#include "sluice/base/errors.h"
#include "sluice/stream/abort_signal.h"
#include "sluice/stream/finished.h"
#include "sluice/stream/pipe_zero_copy.h"

namespace sluice {

namespace {

// The closures of one pipeline() call, shared by its listeners.
struct pipeline_state : std::enable_shared_from_this<pipeline_state> {
  pipeline_cb callback;  // Node: once(callback)
  loop* l = nullptr;
  std::error_code error;
  int finish_count = 0;
  std::deque<std::function<void(std::error_code)>> destroys;
  std::vector<std::function<void()>> last_stream_cleanup;
  abort_registration abort_reg;  // Node: disposable, for options.signal

  // Node: finish(err).
  void finish(std::error_code err) { finish_impl(err, --finish_count == 0); }

  // Node: finishImpl(err, final). The first error wins, unless it was a
  // premature close: a real error found later tells more.
  void finish_impl(std::error_code err, bool final) {
    if (err && (!error || error == make_error_code(errc::premature_close))) error = err;
    if (!error && !final) return;
    while (!destroys.empty()) {
      auto destroy = std::move(destroys.front());
      destroys.pop_front();
      destroy(error);
    }
    abort_reg.dispose();
    if (final) {
      if (!error)
        for (auto& cleanup : last_stream_cleanup) cleanup();
      if (callback) {
        // Node: process.nextTick(callback, error).
        l->next_tick([cb = std::move(callback), e = error]() mutable { cb(e); });
        callback = {};
      }
    }
  }
};

// Node: destroyImpl.destroyer(stream, err).
void destroy_stream(stream_ref s, std::error_code err) {
  if (s.is_destroyed()) return;
  // Node gives an AbortError to a stream not yet finished; pipeline always
  // passes an error, so that branch is never taken here.
  s.destroy(err);
}

// Node: destroyer(stream, reading, writing) of pipeline.js. Returns its
// destroy; `cleanup` gets finished()'s cleanup.
std::function<void(std::error_code)> destroyer(stream_ref s, bool reading, bool writing,
                                               std::function<void()>& cleanup) {
  auto done = std::make_shared<bool>(false);  // Node: finished
  s.events().on(event::close, [done] { *done = true; });
  finished_options o;
  o.readable = reading;
  o.writable = writing;
  cleanup = finished(s, [done](std::error_code err) { *done = !err; }, o);
  return [s, done](std::error_code err) {
    if (*done) return;
    *done = true;
    destroy_stream(s, err ? err : make_error_code(errc::destroyed));
  };
}

// Node: pipe(src, dst, finish, { end }) of pipeline.js. Returns finished()'s
// cleanup for dst.
std::function<void()> pipe(stream_ref src, stream_ref dst, const std::shared_ptr<pipeline_state>& st, bool end) {
  readable& r = *src.readable_side();
  writable& w = *dst.writable_side();
  auto ended = std::make_shared<bool>(false);
  dst.events().on(event::close, [st, ended] {
    if (!*ended) st->finish(make_error_code(errc::premature_close));
  });
  pipe_options po;
  po.end = false;  // if end is true, endFn below ends dst
  // Differs from Node: from an fd to an fd, the kernel moves the bytes
  // while nobody could tell (see pipe_zero_copy()).
  pipe_zero_copy(r, w, po);
  if (end) {
    auto end_fn = [ended, &w] {
      *ended = true;
      w.end();
    };
    if (src.is_readable_finished()) {
      // End the destination if the source has ended already.
      src.event_loop().next_tick(end_fn, src.owner());
    } else {
      r.once(event::end, end_fn);
    }
  } else {
    st->finish({});
  }
  finished_options ro;
  ro.readable = true;
  ro.writable = false;
  finished(src, [st, src](std::error_code err) {
    readable& rs = *src.readable_side();
    if (err == make_error_code(errc::premature_close) && rs.eof_pushed() && !src.readable_errored() &&
        !src.error_emitted()) {
      // Ended, but closed before 'end' was emitted: wait for the 'end'.
      rs.once(event::end, [st] { st->finish({}); });
      rs.once(event::error, [st](std::error_code e) { st->finish(e); });
    } else {
      st->finish(err);
    }
  }, ro);
  finished_options wo;
  wo.readable = false;
  wo.writable = true;
  return finished(dst, [st](std::error_code err) { st->finish(err); }, wo);
}

}  // namespace

void pipeline(std::initializer_list<stream_ref> streams, pipeline_cb cb, const pipeline_options& options) {
  pipeline(std::vector<stream_ref>(streams), std::move(cb), options);
}

// Node: pipelineImpl(streams, callback, opts), for streams.
void pipeline(const std::vector<stream_ref>& streams, pipeline_cb cb, const pipeline_options& options) {
  if (streams.size() < 2) throw stream_error(make_error_code(errc::missing_args));
  // Differs from Node: the kinds are checked before anything is wired, so a
  // bad call changes nothing (Node throws half way through).
  for (std::size_t i = 0; i < streams.size(); ++i) {
    if ((i + 1 < streams.size() && !streams[i].is_readable_node_stream()) ||
        (i > 0 && !streams[i].is_writable_node_stream()))
      throw stream_error(make_error_code(errc::invalid_arg_type));
  }

  auto st = std::make_shared<pipeline_state>();
  st->callback = std::move(cb);
  st->l = &streams.front().event_loop();
  // Node: addAbortListener(outerSignal, abort), before the streams are wired.
  // A weak_ptr: the registration is the state's, and goes with it.
  if (options.signal.stop_possible() || options.signal.stop_requested())
    st->abort_reg = add_abort_listener(options.signal, *st->l, [w = std::weak_ptr(st)] {
      if (auto s = w.lock()) s->finish_impl(make_error_code(errc::aborted), false);
    });

  std::optional<stream_ref> ret;
  for (std::size_t i = 0; i < streams.size(); ++i) {
    const stream_ref stream = streams[i];
    const bool reading = i + 1 < streams.size();
    const bool writing = i > 0;
    const bool end = reading || options.end;
    const bool is_last_stream = i + 1 == streams.size();

    if (end) {
      std::function<void()> cleanup;
      st->destroys.push_back(destroyer(stream, reading, writing, cleanup));
      if (stream.is_readable().value_or(false) && is_last_stream) st->last_stream_cleanup.push_back(cleanup);
    }

    // Node: onError. Errors other than an AbortError or a premature close
    // end the pipeline; after those it waits for every stream's end or close.
    const listener_id on_error_id = stream.events().on(event::error, [st](std::error_code err) {
      if (err && err != make_error_code(errc::aborted) && err != make_error_code(errc::premature_close)) st->finish(err);
    });
    if (stream.is_readable().value_or(false) && is_last_stream) {
      st->last_stream_cleanup.push_back([stream, on_error_id] { stream.events().off(event::error, on_error_id); });
    }

    if (i > 0) {
      st->finish_count += 2;
      auto cleanup = pipe(*ret, stream, st, end);
      if (stream.is_readable().value_or(false) && is_last_stream) st->last_stream_cleanup.push_back(cleanup);
    }
    ret = stream;
  }
}

}  // namespace sluice
