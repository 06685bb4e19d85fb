// The write path, in the order of Node's lib/internal/streams/writable.js:
// write -> write_or_buffer -> do_write -> on_write -> after_write ->
// clear_buffer, then end -> finish_maybe -> prefinish -> finish, then
// destroy. Each function names its Node counterpart and keeps its branches
// in Node's order, so the two can be read side by side.
#include "sluice/stream/writable.h"

#include <algorithm>
#include <cstring>

#include "sluice/base/assert.h"
#include "sluice/base/errors.h"
#include "sluice/stream/detail/destroy.h"
#include "sluice/stream/default_high_water_mark.h"
#include "sluice/stream/readable.h"

namespace sluice {

namespace wf = detail::wflag;
using detail::write_queue;
using detail::write_req;

// The sink's hook for errors met outside its calls (sink::report_error()).
void writable::on_sink_error(std::error_code ec) noexcept { destroy(ec); }

// The sink's capabilities changed (sink::set_caps()): a socket's writev
// waits for its connection.
void writable::on_sink_caps(const sink_caps& caps) noexcept { caps_ = caps; }

// write_done::take_callback(): the sink takes the callback of the one
// request in flight.
write_cb writable::take_write_cb() noexcept {
  SLUICE_ASSERT(writing_.size() == 1 && state_.has(wf::expect_write_cb));
  // Without the flag, on_write() completes the call as one without a
  // callback: no tick is spent on a callback that is no longer there.
  state_.clear(wf::writecb);
  return std::move(writing_.front().cb);
}

writable::writable(std::unique_ptr<sink> s, const writable_options& options)
    : stream_side(state_, options.event_loop ? *options.event_loop : loop::current()),
      sink_(std::move(s)),
      buffered_(pool_.arena) {
  writable_side_ = this;
  if (!sink_) throw stream_error(make_error_code(errc::method_not_implemented), "writable needs a sink");
  if (options.object_mode) state_.set(wf::object_mode);
  state_.high_water_mark = options.high_water_mark.value_or(get_default_high_water_mark(options.object_mode));
  if (options.max_buffered) {
    state_.max_buffered = *options.max_buffered;
    state_.set(wf::capped);
  }
  if (!options.auto_destroy) state_.clear(wf::auto_destroy);
  if (!options.emit_close) state_.clear(wf::emit_close);
  caps_ = sink_->caps();
  host(*sink_);
  sink_->attach(*loop_);
  if (sink_->sync()) {
    loop_close_.fn = &writable::on_loop_close;
    loop_close_.owner = this;
    loop_->add_close_hook(loop_close_);
    shutdown_.at_exit = &writable::on_exit;
    shutdown_.owner = this;
    detail::shutdown_registry::add(shutdown_);
  }
}

// Differs from Node: a C++ object can go away with work still owed. A sink
// that can write synchronously first writes what is pending (sluice's own
// guarantee, see shutdown.h). The sink goes next (it may hold a
// write_done), then every callback still owed is called: completed and
// synchronously written writes with success, the others with the stream's
// error or ERR_STREAM_DESTROYED. No event is emitted, and callbacks must not
// touch the stream.
writable::~writable() {
  detail::shutdown_registry::remove(shutdown_);
  loop_->remove_close_hook(loop_close_);
  drop_soon();
  write_pending_sync();
  if (!destroyed()) sink_->destroy({}, [](std::error_code) noexcept {});
  sink_.reset();
  const auto gone = make_error_code(errc::destroyed);
  for (std::size_t i = owed_head_; i < owed_.size(); ++i) owed_[i].first(owed_[i].second);
  owed_.clear();
  call_back(done_, done_.size(), {});
  call_back(failed_, failed_.size(), errored() ? errored() : gone);
  call_back(landed_, landed_.size(), {});
  call_back(writing_, writing_.size(), gone);
  call_back(buffered_.closed(), buffered_.size(), errored() ? errored() : gone);
  call_finished_callbacks(gone);
}

// Node: the writable half of _destroy(): the sink's.
void writable::destroy_io(std::error_code err, destroy_done done) noexcept { sink_->destroy(err, std::move(done)); }

// Node: process.nextTick(cb, err). The callback waits in owed_ rather than in
// the task, so that the destructor can still pay it if the tick never comes.
void writable::call_back_soon(write_cb cb, std::error_code ec) {
  if (!cb) return;
  owed_.emplace_back(std::move(cb), ec);
  call_soon([this] {
    auto [callback, err] = std::move(owed_[owed_head_]);
    if (++owed_head_ == owed_.size()) {
      owed_.clear();  // keeps its capacity
      owed_head_ = 0;
    }
    callback(err);
  });
}

// What a request counts toward `length`: its bytes, or its writes in object mode.
inline std::size_t writable::chunk_len(const write_req& r) const noexcept {
  return state_.has(wf::object_mode) ? r.count() : r.bytes();
}

bool writable::is_writable() const noexcept {
  return !state_.has(wf::ending | wf::ended | wf::destroyed | wf::errored | wf::not_writable);
}

bool writable::writable_need_drain() const noexcept {
  return (state_.flags & (wf::destroyed | wf::ending | wf::need_drain)) == wf::need_drain;
}

// ---- write

// The arena room a chunk takes is past the open run's end, which is the
// arena's next(): the run is closed first, counting what joined it.
[[gnu::always_inline]] inline write_req& writable::make_req(std::string_view chunk) {
  buffered_.close_run();
  write_req& r = pool_.acquire();
  if (chunk.empty()) {
    // Nothing to copy; the view keeps its address, by which a transform
    // tells its own marker writes (zlib_base's flush()) from a caller's.
    r.set(chunk);
  } else if (chunk.size() <= detail::byte_arena::max_chunk) [[likely]] {
    r.set({reinterpret_cast<const char*>(pool_.arena.copy(chunk.data(), chunk.size())), chunk.size()});
  } else {
    r.owned = new detail::owned_chunk{std::string(chunk)};
    r.set(std::get<std::string>(r.owned->buffer));
  }
  return r;
}

// Node: the error branch of _write(): the callback hears of the error on the
// next tick, and the stream errors (or is destroyed).
[[gnu::noinline]] bool writable::fail_after_end(write_cb cb) {
  const std::error_code err =
      make_error_code(state_.has(wf::ending) ? errc::write_after_end : errc::destroyed);
  call_back_soon(std::move(cb), err);
  error_or_destroy(err, true);
  return false;
}

// Node: Writable.prototype.write() and _write(), for what write()'s inline
// fast path (writable.h) leaves: a chunk that may go to the sink at once, an
// empty or large one, object mode, and the rare cases (ended, destroyed,
// capped, errored), which one flag test sends on to write_guarded().
bool writable::write_slow(std::string_view chunk, write_cb&& cb) {
  if (state_.has(wf::ending | wf::destroyed | wf::capped)) [[unlikely]]
    return write_guarded(chunk, std::move(cb));
  return accept(make_req(chunk), std::move(cb));
}

// write(chunk, const write_cb&) for a write that does not join the open
// run: the request takes a copy of the caller's callback.
bool writable::write_shared(std::string_view chunk, const write_cb& cb) {
  if (!cb) {
    // The inline check took `cb` for a callback; without one the write may
    // still join a run of writes without callbacks.
    if (joins_open_run(chunk.size())) return join_open_run(chunk);
    return write_slow(chunk, write_cb{});
  }
  if (!cb.copyable()) [[unlikely]]
    throw stream_error(make_error_code(errc::invalid_arg_type),
                       "write(chunk, const write_cb&) needs a callback that can be copied (copyable()); "
                       "move a callback that owns state into write() instead");
  return write_slow(chunk, cb.copy());
}

// write() when the stream has ended, is destroyed or has a cap.
[[gnu::noinline]] bool writable::write_guarded(std::string_view chunk, write_cb cb) {
  if (state_.has(wf::ending | wf::destroyed)) return fail_after_end(std::move(cb));
  if (over_cap(chunk.size())) return refuse_over_cap(std::move(cb));
  return accept(make_req(chunk), std::move(cb));
}

// sluice's own: would a chunk of `bytes` take the stream past max_buffered?
bool writable::over_cap(std::size_t bytes) const noexcept {
  if (!state_.has(wf::capped)) return false;
  const std::size_t len = state_.has(wf::object_mode) ? 1 : bytes;
  return len > state_.max_buffered || state_.length > state_.max_buffered - len;
}

// sluice's own: a write refused for max_buffered. Nothing is buffered and
// the stream goes on; the callback hears why on the next tick, and 'drain'
// follows when what the stream holds is written, as after a false return
// for the high-water mark.
[[gnu::noinline]] bool writable::refuse_over_cap(write_cb cb) {
  ++state_.refused_writes;
  if (state_.length > 0) state_.set(wf::need_drain);
  call_back_soon(std::move(cb), make_error_code(errc::buffer_full));
  return false;
}

// Node: the end of _write(): the request counts as pending from here on.
[[gnu::always_inline]] inline bool writable::accept(write_req& r, write_cb cb) {
  r.cb.assign_empty(std::move(cb));  // pooled requests hold no callback
  ++state_.pending_cb;
  return write_or_buffer(r);
}

// print()'s way in (writable_print.cc): the line it formatted into the
// arena's free room becomes a request, as write() makes one from a copy.
bool writable::write_formatted(std::string_view line, write_cb&& cb) {
  SLUICE_ASSERT_THREAD(state_.owner_thread, "writable::print()");
  buffered_.close_run();  // print_start() closed it; nothing may have opened one since
  write_req& r = pool_.acquire();
  if (!line.empty()) {
    pool_.arena.commit(line.size());
    r.set(line);
  } else {
    r.set({});
  }
  return accept(r, std::move(cb));
}

bool writable::write(std::span<const std::byte> chunk, write_cb cb) {
  return write(std::string_view(reinterpret_cast<const char*>(chunk.data()), chunk.size()),
               std::move(cb));
}

template <class Owned>
bool writable::write_owned(Owned&& chunk, std::string_view bytes, write_cb cb) {
  SLUICE_ASSERT_THREAD(state_.owner_thread, "writable::write()");
  if (bytes.size() <= detail::byte_arena::max_chunk) return write(bytes, std::move(cb));
  if (state_.has(wf::ending | wf::destroyed)) return fail_after_end(std::move(cb));
  if (over_cap(bytes.size())) return refuse_over_cap(std::move(cb));
  write_req& r = pool_.acquire();
  // Moving a std::string or vector keeps its buffer where it is.
  r.owned = new detail::owned_chunk{std::forward<Owned>(chunk)};
  r.set(bytes);
  return accept(r, std::move(cb));
}

bool writable::write(std::string&& chunk, write_cb cb) {
  const std::string_view bytes = chunk;
  return write_owned(std::move(chunk), bytes, std::move(cb));
}

bool writable::write(std::vector<std::byte>&& chunk, write_cb cb) {
  const std::string_view bytes(reinterpret_cast<const char*>(chunk.data()), chunk.size());
  return write_owned(std::move(chunk), bytes, std::move(cb));
}

bool writable::write(std::shared_ptr<const void> keep, std::string_view bytes, write_cb cb) {
  return write_owned(std::move(keep), bytes, std::move(cb));
}

// Node: writeOrBuffer(). The request goes to the sink at once when nothing is
// in flight, else it waits in the buffer; either way it counts toward length.
[[gnu::always_inline]] inline bool writable::write_or_buffer(write_req& r) {
  const std::size_t len = chunk_len(r);
  state_.length += len;

  if (caps_.coalesce && !state_.has(wf::writing | wf::coalescing)) [[unlikely]]
    start_coalescing();

  if ((state_.flags & (wf::writing | wf::errored | wf::corked | wf::coalescing | wf::constructed)) != wf::constructed) {
    write_req* run = buffered_.last();
    if (run && joins(*run, r)) {
      // The chunk was copied right after the newest request's last one
      // (print() formats in place there, and so are writes while no run
      // is open: corked ones): it joins that request.
      buffered_.add_to_last(r.size());
      r.set({});
      r.cb = nullptr;
      pool_.release(r);
    } else {
      buffered_.push_back(r);
      state_.set(wf::buffered);
      if (r.cb) state_.clear(wf::all_noop);
      run = &r;
    }
    if (runs_allowed() && may_open_run(*run)) buffered_.open_run(*run);
  } else {
    write_now(r, len);
  }

  const bool ret = state_.length < state_.high_water_mark || state_.length == 0;
  if (!ret) state_.set(wf::need_drain);
  return ret && !state_.has(wf::destroyed | wf::errored);
}

// Can the chunks that follow `r`, just buffered, join it? Not in object
// mode, where `length` counts writes, nor with max_buffered, which every
// write must be checked against; and only a chunk in the arena, whose
// callback is empty or can be called once per write
// (inline_function::copyable()).
inline bool writable::may_open_run(const write_req& r) const noexcept {
  return !state_.has(wf::object_mode | wf::capped) && !r.owned && r.size() != 0 && (!r.cb || r.cb.copyable());
}

// Does `r`, just made, join `last`, the newest buffered request: copied
// right after its last chunk, of its size, with the same callback?
inline bool writable::joins(const write_req& last, const write_req& r) const noexcept {
  return may_open_run(last) && r.size() == last.size() && r.first == last.first + last.bytes() && !r.owned &&
         r.cb.same_target(last.cb);
}

// May a run stay open for write()'s inline path (joins_open_run())? Only
// while a write would be buffered (a sink call or the turn's coalescing
// holds it, so write_or_buffer() neither starts one nor starts coalescing)
// and would return what the high-water mark says (the stream is neither
// ended, destroyed nor errored). Wherever one of these stops holding, the
// run is closed (close_run()), so that write() tests none of them.
bool writable::runs_allowed() const noexcept {
  return (state_.flags & (wf::ending | wf::destroyed | wf::errored)) == 0 &&
         (state_.flags & (wf::writing | wf::coalescing)) != 0;
}

// Node: the else branch of writeOrBuffer(): nothing in flight, so the sink
// gets this chunk at once. Out of line: the buffered branch is the hot one.
[[gnu::noinline]] void writable::write_now(write_req& r, std::size_t len) {
  writing_.push_back(r);
  state_.write_len = len;
  if (r.cb) state_.set(wf::writecb);
  state_.set(wf::writing | wf::sync | wf::expect_write_cb);
  sink_->write(r.run(), write_done(*this));
  state_.clear(wf::sync);
}

// Node: doWrite(). The requests are already in writing_.
void writable::do_write(bool writev, std::size_t len) {
  state_.write_len = len;
  state_.set(wf::writing | wf::sync | wf::expect_write_cb);
  if (state_.has(wf::destroyed)) {
    on_write(make_error_code(errc::destroyed), 0);
  } else if (writev) {
    sink_->writev(write_batch(writing_), write_done(*this));
  } else {
    sink_->write(writing_.front().run(), write_done(*this));
  }
  state_.clear(wf::sync);
}

// Node: onwrite(). The sink finished the call in flight. A sink that finished
// synchronously (inside write()) has its callbacks deferred to the next tick,
// so that they, and 'drain', never run inside write(). On an error, the
// first `landed` requests were written whole (see write_done).
void writable::on_write(std::error_code er, std::size_t landed) noexcept {
  if (!state_.has(wf::expect_write_cb)) {
    error_or_destroy(make_error_code(errc::multiple_callback), false);
    return;
  }
  const bool is_sync = state_.has(wf::sync);
  const bool has_cb = state_.has(wf::writecb);
  SLUICE_ASSERT(!writing_.empty() && state_.length >= state_.write_len && state_.pending_cb > 0);
  state_.clear(wf::writecb | wf::writing | wf::expect_write_cb);
  buffered_.close_run();  // see runs_allowed()
  state_.length -= state_.write_len;
  state_.write_len = 0;

  // Take this call's requests out first: clear_buffer() below may start the
  // next call, whose requests go to writing_.
  write_queue completed;
  completed.splice_back(writing_);
  const std::size_t n = completed.size();

  if (er) {
    // The readable side of a duplex learns of the error too.
    detail::destroy_impl::check_error(readable_side_, this, er);
    landed = std::min(landed, n);
    if (is_sync) {
      failed_.splice_back(completed);
      call_soon([this, er, n, landed] { on_write_error(er, failed_, n, landed); });
    } else {
      on_write_error(er, completed, n, landed);
    }
    return;
  }

  if (state_.has(wf::buffered)) clear_buffer();

  if (is_sync) {
    const bool need_drain_now = state_.has(wf::need_drain) && state_.length == 0;
    // Node writes `state[kState] & kDestroyed !== 0`, which precedence makes
    // `state & 1`: the object-mode bit. Copied, so object-mode streams defer
    // exactly as Node's do.
    const bool need_tick = need_drain_now || state_.has(wf::object_mode) || has_cb;
    if (!has_cb) {
      call_back(completed, n, {});  // nothing to call: just recycles
      if (!state_.has(wf::after_write_pending) && need_tick) {
        state_.set(wf::after_write_pending);
        call_soon([this] {
          write_queue none;
          after_write(none, 0);
        });
      } else {
        --state_.pending_cb;
        if (state_.has(wf::ending)) finish_maybe(true);
      }
    } else {
      // Node merges ticks whose callback is the same function object; C++
      // callbacks have no identity, so each call gets its own tick, as Node
      // does for distinct functions.
      done_.splice_back(completed);
      state_.set(wf::after_write_pending);
      call_soon([this, n] { after_write(done_, n); });
    }
  } else {
    after_write(completed, n);
  }
}

// Node: onwriteError(). Differs from Node: the requests that landed before
// the error hear success (see write_done).
void writable::on_write_error(std::error_code er, write_queue& reqs, std::size_t n, std::size_t landed) noexcept {
  SLUICE_ASSERT(state_.pending_cb > 0);
  --state_.pending_cb;
  if (landed > 0) call_back(reqs, landed, {});
  call_back(reqs, n - landed, er);
  error_buffer();
  error_or_destroy(er, false);
}

// Node: afterWrite(). 'drain' comes before the callbacks of the write that
// emptied the stream.
void writable::after_write(write_queue& reqs, std::size_t n) noexcept {
  state_.clear(wf::after_write_pending);
  if ((state_.flags & (wf::ending | wf::need_drain | wf::destroyed)) == wf::need_drain && state_.length == 0) {
    state_.clear(wf::need_drain);
    emit(event::drain);
  }
  // Node counts its merged ticks here (afterWriteTickInfo.count); sluice
  // calls back one sink call's requests per after_write.
  SLUICE_ASSERT(state_.pending_cb > 0);
  --state_.pending_cb;
  call_back(reqs, n, {});
  if (state_.has(wf::destroyed)) error_buffer();
  if (state_.has(wf::ending)) finish_maybe(true);
}

// Calls the callback of each of r's writes, in order: a run's callback is
// one function for all of them, and each call gets a copy of its own, as
// each write gave one. call_n() loops in the callback's own code: one
// indirect call for the run, not one per write.
inline void writable::call_each(write_req& r, std::error_code ec) noexcept {
  if (!r.cb) return;
  r.cb.call_n(r.count(), ec);
}

// Calls back the first n writes of `reqs`. Their requests are moved to a
// list of their own first, because a callback may write again, and that can
// touch every queue of the stream. One walk calls back and recycles each.
void writable::call_back(write_queue& reqs, std::size_t n, std::error_code ec) noexcept {
  write_queue batch;
  pool_.move_front(reqs, batch, n);
  pool_.recycle_all(batch, [this, ec](write_req& r) { call_each(r, ec); });
  // Nothing pending: a quiet stream holds no requests between its writes.
  if (state_.length == 0) pool_.release_idle();
}

// Node: errorBuffer(). Buffered requests will never be written: each
// callback hears why, then the end() callbacks.
void writable::error_buffer() noexcept {
  if (state_.has(wf::writing)) return;
  if (state_.has(wf::buffered)) {
    const std::error_code why = errored() ? errored() : make_error_code(errc::destroyed);
    while (!buffered_.empty()) {
      write_req& r = buffered_.pop_front();
      state_.length -= chunk_len(r);
      const std::size_t writes = r.count();
      write_cb cb = std::move(r.cb);
      pool_.release(r);
      if (cb) cb.call_n(writes, why);
    }
  }
  call_finished_callbacks(errored() ? errored() : make_error_code(errc::destroyed));
  state_.clear(wf::buffered);
  state_.set(wf::all_noop);
}

// Node: clearBuffer(). Hands the buffered requests to the sink: all of them in
// one writev when the sink has one and there are two or more, else one write
// at a time until one stays in flight.
void writable::clear_buffer() noexcept {
  if ((state_.flags & (wf::destroyed | wf::buffer_processing | wf::corked | wf::coalescing | wf::buffered | wf::constructed)) !=
      (wf::buffered | wf::constructed)) {
    return;
  }
  const std::size_t n = buffered_.size();
  if (n == 0) return;

  state_.set(wf::buffer_processing);
  if (n > 1 && caps_.writev) {
    state_.pending_cb -= n - 1;
    if (!state_.has(wf::all_noop)) state_.set(wf::writecb);
    writing_.splice_back(buffered_.closed());
    do_write(true, state_.length);
    state_.clear(wf::buffered);
    state_.set(wf::all_noop);
  } else {
    do {
      // One write at a time: the first chunk of a run leaves it.
      pool_.move_front(buffered_.closed(), writing_, 1);
      const write_req& r = writing_.front();
      if (r.cb) state_.set(wf::writecb);
      do_write(false, chunk_len(r));
    } while (!buffered_.empty() && !state_.has(wf::writing));
    if (buffered_.empty()) {
      state_.clear(wf::buffered);
      state_.set(wf::all_noop);
    }
  }
  state_.clear(wf::buffer_processing);
}

void writable::cork() noexcept {
  state_.set(wf::corked);
  ++state_.corked;
}

// Node: uncork(). Writes only once the outermost cork is gone.
void writable::uncork() {
  if (state_.corked) {
    if (--state_.corked == 0) state_.clear(wf::corked);
    if (!state_.has(wf::writing)) clear_buffer();
  }
}

// ---- sluice's own: a turn's writes held for one writev (sink_caps::coalesce)

// sluice's own: the first write of a turn to a coalescing stream holds the
// writes that follow until the end of the turn.
[[gnu::noinline]] void writable::start_coalescing() {
  state_.set(wf::coalescing);
  if (!state_.has(wf::flush_scheduled)) {
    state_.set(wf::flush_scheduled);
    call_soon([this] { flush_coalesced(); });
  }
}

// sluice's own: the end of the turn in which a coalescing stream was first
// written to. Everything written since leaves in one clear_buffer().
// Like Node's onConstructed(), which also releases held writes: clear the
// buffer, then finish if end() came while they were held (a sink that
// completed inside clear_buffer() could not finish: the buffer was in use).
void writable::flush_coalesced() noexcept {
  state_.clear(wf::flush_scheduled | wf::coalescing);
  buffered_.close_run();  // see runs_allowed()
  if (!state_.has(wf::writing)) clear_buffer();
  if (state_.has(wf::ending)) finish_maybe(true);
}

// sluice's own: ends the turn's coalescing early. The flush_coalesced() tick
// stays scheduled (flush_scheduled stays set, so writes that follow coalesce
// until it runs, as they would have) and then finds nothing held.
void writable::flush_held() noexcept {
  if (!state_.has(wf::coalescing)) return;
  state_.clear(wf::coalescing);
  buffered_.close_run();  // see runs_allowed()
  if (!state_.has(wf::writing)) clear_buffer();
}

// ---- end

writable& writable::end(write_cb cb) { return end_impl(nullptr, std::move(cb)); }
writable& writable::end(std::string_view chunk, write_cb cb) { return end_impl(&chunk, std::move(cb)); }

// Node: Writable.prototype.end().
writable& writable::end_impl(const std::string_view* chunk_or_null, write_cb cb) {
  SLUICE_ASSERT_THREAD(state_.owner_thread, "writable::end()");
  std::error_code err;
  if (chunk_or_null) {
    const std::string_view chunk = *chunk_or_null;
    if (state_.has(wf::ending | wf::destroyed)) {
      err = make_error_code(state_.has(wf::ending) ? errc::write_after_end : errc::destroyed);
      error_or_destroy(err, true);
    } else {
      write(chunk);
    }
  }

  if (state_.has(wf::corked)) {
    state_.corked = 1;
    uncork();
  }

  if (err) {
    // Node: the chunk's error is end()'s error.
  } else if (!state_.has(wf::ending | wf::errored)) {
    state_.set(wf::ending);
    buffered_.close_run();  // see runs_allowed()
    finish_maybe(true);
    state_.set(wf::ended);
  } else if (state_.has(wf::finished)) {
    err = make_error_code(errc::already_finished);
  } else if (state_.has(wf::destroyed)) {
    err = make_error_code(errc::destroyed);
  }

  if (cb) {
    if (err) {
      call_back_soon(std::move(cb), err);
    } else if (state_.has(wf::errored)) {
      call_back_soon(std::move(cb), errored_);
    } else if (state_.has(wf::finished)) {
      call_back_soon(std::move(cb), {});
    } else {
      state_.set(wf::on_finished);
      on_finished_.push_back(std::move(cb));
    }
  }
  return *this;
}

// Node: needFinish().
bool writable::need_finish() const noexcept {
  return (state_.flags & (wf::ending | wf::destroyed | wf::constructed | wf::finished | wf::writing | wf::error_emitted |
                          wf::close_emitted | wf::errored | wf::buffered)) == (wf::ending | wf::constructed) &&
         state_.length == 0;
}

// Node: onFinish(), the callback of _final.
void writable::on_finish(std::error_code err) noexcept {
  if (state_.has(wf::prefinished)) {
    error_or_destroy(err ? err : make_error_code(errc::multiple_callback), false);
    return;
  }
  --state_.pending_cb;
  if (err) {
    call_finished_callbacks(err);
    error_or_destroy(err, state_.has(wf::sync));
  } else if (need_finish()) {
    state_.set(wf::prefinished);
    emit(event::prefinish);
    ++state_.pending_cb;
    call_soon([this] { finish(); });
  }
}

// Node: prefinish(). Calls the sink's final once, or emits 'prefinish' at once
// when there is none.
void writable::prefinish() noexcept {
  if (state_.has(wf::prefinished | wf::final_called)) return;
  if (caps_.final && !state_.has(wf::destroyed)) {
    state_.set(wf::final_called | wf::sync);
    ++state_.pending_cb;
    sink_->final(final_done(*this));
    state_.clear(wf::sync);
  } else {
    state_.set(wf::final_called | wf::prefinished);
    emit(event::prefinish);
  }
}

// Node: finishMaybe().
void writable::finish_maybe(bool is_sync) noexcept {
  if (!need_finish()) return;
  prefinish();
  if (state_.pending_cb != 0) return;
  if (is_sync) {
    ++state_.pending_cb;
    call_soon([this] {
      if (need_finish())
        finish();
      else
        --state_.pending_cb;
    });
  } else if (need_finish()) {
    ++state_.pending_cb;
    finish();
  }
}

// Node: finish().
void writable::finish() noexcept {
  SLUICE_ASSERT(state_.pending_cb > 0);
  --state_.pending_cb;
  state_.set(wf::finished);
  call_finished_callbacks({});
  emit(event::finish);
  if (state_.has(wf::auto_destroy)) {
    // A duplex is destroyed once its readable side has ended too.
    if (!readable_side_ || (readable_side_->readable_state().has(detail::rflag::auto_destroy) &&
                            readable_side_->readable_state().has(detail::rflag::end_emitted | detail::rflag::not_readable)))
      destroy();
  }
}

// Node: callFinishedCallbacks().
void writable::call_finished_callbacks(std::error_code ec) noexcept {
  if (!state_.has(wf::on_finished)) return;
  std::vector<write_cb> callbacks = std::move(on_finished_);
  on_finished_.clear();
  state_.clear(wf::on_finished);
  for (auto& cb : callbacks) cb(ec);
}

// ---- destroy (Node: Writable.prototype.destroy; the rest is destroy.cc)

writable& writable::destroy(std::error_code err) {
  SLUICE_ASSERT_THREAD(state_.owner_thread, "writable::destroy()");
  // Differs from Node in form only: the writes held for this turn (see
  // sink_caps::coalesce) would have been handed to _write already in Node, so
  // they are in flight, not buffered: they go to the sink before it is
  // destroyed, and land as Node's would. (An error such as a write after
  // end() comes here too, through errorOrDestroy.)
  if (state_.has(wf::coalescing) && !state_.has(wf::destroyed)) flush_held();
  if (state_.has(wf::buffered | wf::on_finished) && !state_.has(wf::destroyed))
    call_soon([this] { error_buffer(); });
  detail::destroy_impl::destroy(readable_side_, this, err);
  return *this;
}

// Node: errorOrDestroy().
void writable::error_or_destroy(std::error_code err, bool is_sync) noexcept {
  detail::destroy_impl::error_or_destroy(readable_side_, this, err, is_sync);
}

}  // namespace sluice
