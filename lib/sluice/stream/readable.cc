// The read path, in the order of Node's lib/internal/streams/readable.js:
// push -> readableAddChunk* -> addChunk -> emitReadable -> maybeReadMore,
// then read -> howMuchToRead -> fromList -> endReadable, on/removeListener,
// resume/pause/flow, then destroy (destroy.js); pipe and unpipe are in
// pipe.cc. Each function names its Node counterpart and keeps its branches in
// Node's order, so the two can be read side by side.
#include "sluice/stream/readable.h"

#include <algorithm>
#include <cassert>

#include "sluice/base/assert.h"
#include "sluice/base/errors.h"
#include "sluice/stream/detail/destroy.h"
#include "sluice/stream/default_high_water_mark.h"
#include "sluice/stream/writable.h"

namespace sluice {

namespace rf = detail::rflag;

readable::readable(std::unique_ptr<source> s, const readable_options& options)
    : stream_side(state_, options.event_loop ? *options.event_loop : loop::current()), source_(std::move(s)) {
  readable_side_ = this;
  if (!source_) throw stream_error(make_error_code(errc::method_not_implemented), "readable needs a source");
  if (options.object_mode) state_.set(rf::object_mode);
  state_.high_water_mark = options.high_water_mark.value_or(get_default_high_water_mark(options.object_mode));
  if (!options.auto_destroy) state_.clear(rf::auto_destroy);
  if (!options.emit_close) state_.clear(rf::emit_close);
  host(*source_);
  source_->attach(*loop_);
}

// Node: the readable half of _destroy(): the source's.
void readable::destroy_io(std::error_code err, inline_function<void(std::error_code), 16> done) noexcept {
  done(source_->destroy(err));
}

void readable::rehome(loop& l) noexcept {
  loop_ = &l;
  source_->attach(l);
}

void readable::emit_data(std::string_view chunk) noexcept {
  event_arg arg;
  arg.chunk = chunk;
  emit(event::data, arg);
}

// ---- push and unshift

bool readable::push(std::string_view chunk) { return push_chunk({chunk, nullptr}); }
bool readable::push(std::string&& chunk) { return push_chunk({chunk, &chunk}); }
bool readable::unshift(std::string_view chunk) { return unshift_chunk({chunk, nullptr}); }
bool readable::unshift(std::string&& chunk) { return unshift_chunk({chunk, &chunk}); }

// Node: Readable.prototype.push().
bool readable::push_chunk(chunk_ref c) {
  SLUICE_ASSERT_THREAD(state_.owner_thread, "readable::push()");
  return !state_.has(rf::object_mode) ? readable_add_chunk_push_byte_mode(c) : readable_add_chunk_push_object_mode(c);
}

// Node: the `chunk === null` branch that opens both readableAddChunkPush*Mode().
bool readable::push_eof() {
  SLUICE_ASSERT_THREAD(state_.owner_thread, "readable::push_eof()");
  state_.clear(rf::reading);
  on_eof_chunk();
  return false;
}

// Node: Readable.prototype.unshift().
bool readable::unshift_chunk(chunk_ref c) {
  SLUICE_ASSERT_THREAD(state_.owner_thread, "readable::unshift()");
  return !state_.has(rf::object_mode) ? readable_add_chunk_unshift_byte_mode(c)
                                      : readable_add_chunk_unshift_object_mode(c);
}

// Node: readableAddChunkUnshiftByteMode(). An empty chunk adds nothing.
bool readable::readable_add_chunk_unshift_byte_mode(chunk_ref c) {
  if (c.bytes.empty()) return can_push_more();
  return readable_add_chunk_unshift_value(c);
}

// Node: readableAddChunkUnshiftObjectMode().
bool readable::readable_add_chunk_unshift_object_mode(chunk_ref c) { return readable_add_chunk_unshift_value(c); }

// Node: readableAddChunkUnshiftValue().
bool readable::readable_add_chunk_unshift_value(chunk_ref c) {
  if (state_.has(rf::end_emitted))
    error_or_destroy(make_error_code(errc::unshift_after_end), false);
  else if (state_.has(rf::destroyed | rf::errored))
    return false;
  else
    add_chunk(c, true);
  return can_push_more();
}

// Node: readableAddChunkPushByteMode(). An empty chunk ends a pending read
// without adding anything, even after EOF.
bool readable::readable_add_chunk_push_byte_mode(chunk_ref c) {
  if (c.bytes.empty()) {
    state_.clear(rf::reading);
    maybe_read_more();
    return can_push_more();
  }
  if (state_.has(rf::ended)) {
    error_or_destroy(make_error_code(errc::push_after_eof), false);
    return false;
  }
  if (state_.has(rf::destroyed | rf::errored)) return false;
  state_.clear(rf::reading);
  add_chunk(c, false);
  return can_push_more();
}

// Node: readableAddChunkPushObjectMode(). Every chunk counts, even an empty one.
bool readable::readable_add_chunk_push_object_mode(chunk_ref c) {
  if (state_.has(rf::ended)) {
    error_or_destroy(make_error_code(errc::push_after_eof), false);
    return false;
  }
  if (state_.has(rf::destroyed | rf::errored)) return false;
  state_.clear(rf::reading);
  add_chunk(c, false);
  return can_push_more();
}

// Node: canPushMore(). Below the high-water mark, or nothing buffered at all:
// Node's workaround for hwm = 0 streams (the REPL), which must still ask for data.
bool readable::can_push_more() const noexcept {
  return !state_.has(rf::ended) && (state_.length < state_.high_water_mark || state_.length == 0);
}

// Node: addChunk(). In flowing mode with an empty buffer, outside the
// source's read(), the chunk goes straight out as 'data'; else it is buffered.
void readable::add_chunk(chunk_ref c, bool add_to_front) {
  if ((state_.flags & (rf::flowing | rf::sync | rf::data_listening)) == (rf::flowing | rf::data_listening) &&
      state_.length == 0) {
    clear_await_drain();
    state_.set(rf::data_emitted);
    emit_data(c.bytes);
  } else {
    state_.length += state_.has(rf::object_mode) ? 1 : c.bytes.size();
    if (add_to_front)
      buffer_.push_front(c.take());
    else
      buffer_.push_back(c.take());
    if (state_.has(rf::need_readable)) {
      // Node: emitReadable() then maybeReadMore(). When both queue their
      // tick, the two ticks sit side by side in the queue (nothing is queued
      // between them, and microtasks wait for every tick), so one tick runs
      // both bodies in Node's order: a paused stream's every chunk saves a tick.
      if ((state_.flags & (rf::emitted_readable | rf::reading_more | rf::constructed)) == rf::constructed) {
        state_.clear(rf::need_readable);
        state_.set(rf::emitted_readable | rf::reading_more);
        call_soon([this] {
          emit_readable_tick();
          maybe_read_more_tick();
        });
        return;
      }
      emit_readable();
    }
  }
  maybe_read_more();
}

// Node: Readable.prototype.isPaused().
bool readable::is_paused() const noexcept {
  return state_.has(rf::paused) || (state_.flags & (rf::has_flowing | rf::flowing)) == rf::has_flowing;
}

namespace {
// Node: computeNewHighWaterMark(). Don't raise the hwm above 1 GiB; else
// round up to a power of two, so that it does not grow in tiny steps.
std::size_t compute_new_high_water_mark(std::size_t n) {
  constexpr std::size_t max_hwm = 0x40000000;
  if (n > max_hwm) throw stream_error(make_error_code(errc::out_of_range));
  n--;
  n |= n >> 1;
  n |= n >> 2;
  n |= n >> 4;
  n |= n >> 8;
  n |= n >> 16;
  n++;
  return n;
}
}  // namespace

// Node: howMuchToRead(). `all` is Node's n = NaN: read() with no size.
std::size_t readable::how_much_to_read(std::size_t n, bool all) const noexcept {
  if ((!all && n == 0) || (state_.length == 0 && state_.has(rf::ended))) return 0;
  if (state_.has(rf::object_mode)) return 1;
  if (all) {
    // Only flow one chunk at a time.
    if (state_.has(rf::flowing) && state_.length) return buffer_.front().size();
    return state_.length;
  }
  if (n <= state_.length) return n;
  return state_.has(rf::ended) ? state_.length : 0;
}

std::optional<std::string> readable::read() { return read_impl(0, true); }
std::optional<std::string> readable::read(std::size_t n) { return read_impl(n, false); }

// Node: Readable.prototype.read(). The source's read() is called before the
// chunk is taken, because a synchronous source may fill the buffer.
std::optional<std::string> readable::read_impl(std::size_t n, bool all) {
  SLUICE_ASSERT_THREAD(state_.owner_thread, "readable::read()");
  const std::size_t n_orig = n;

  if (!all && n > state_.high_water_mark) state_.high_water_mark = compute_new_high_water_mark(n);

  if (all || n != 0) state_.clear(rf::emitted_readable);

  // read(0) to trigger a 'readable' with enough buffered already: just emit it.
  if (!all && n == 0 && state_.has(rf::need_readable) &&
      ((state_.high_water_mark != 0 ? state_.length >= state_.high_water_mark : state_.length > 0) ||
       state_.has(rf::ended))) {
    if (state_.length == 0 && state_.has(rf::ended))
      end_readable();
    else
      emit_readable();
    return std::nullopt;
  }

  n = how_much_to_read(n, all);

  // Ended, and now clear: finish it up.
  if (n == 0 && state_.has(rf::ended)) {
    if (state_.length == 0) end_readable();
    return std::nullopt;
  }

  // Read more when a 'readable' is owed, or when below the high-water mark
  // after this read; never when ended, reading already, or destroyed.
  bool do_read = state_.has(rf::need_readable);
  if (state_.length == 0 || state_.length - n < state_.high_water_mark) do_read = true;

  if ((state_.flags & (rf::reading | rf::ended | rf::destroyed | rf::errored | rf::constructed)) != rf::constructed) {
    do_read = false;
  } else if (do_read) {
    state_.set(rf::reading | rf::sync);
    if (state_.length == 0) state_.set(rf::need_readable);
    source_->read(state_.high_water_mark);
    state_.clear(rf::sync);
    // A synchronous push ended `reading`: look again at what is there.
    if (!state_.has(rf::reading)) n = how_much_to_read(n_orig, all);
  }

  std::optional<std::string> ret;
  if (n > 0) ret = from_list(n);

  if (!ret) {
    if (state_.length <= state_.high_water_mark) state_.set(rf::need_readable);
    n = 0;
  } else {
    state_.length -= n;
    clear_await_drain();
  }

  if (state_.length == 0) {
    // Nothing buffered: a 'readable' is owed as soon as something comes.
    if (!state_.has(rf::ended)) state_.set(rf::need_readable);
    // A read past the end: 'end' on the next tick. (Node compares nOrig with
    // n, and NaN, read()'s size, never equals anything.)
    if ((all || n_orig != n) && state_.has(rf::ended)) end_readable();
  }

  if (ret && !state_.has(rf::error_emitted | rf::close_emitted)) {
    state_.set(rf::data_emitted);
    emit_data(*ret);
  }
  return ret;
}

// Node: onEofChunk(). Inside the source's read() the 'readable' waits for the
// next tick; otherwise it is emitted now (modules such as dicer rely on it).
void readable::on_eof_chunk() noexcept {
  if (state_.has(rf::ended)) return;
  state_.set(rf::ended);
  if (state_.has(rf::sync)) {
    emit_readable();
  } else {
    state_.clear(rf::need_readable);
    state_.set(rf::emitted_readable);
    emit_readable_tick();
  }
}

// Node: emitReadable(). Never emits at once: a 'readable' listener calling
// read() could recurse without bound.
void readable::emit_readable() noexcept {
  state_.clear(rf::need_readable);
  if (!state_.has(rf::emitted_readable)) {
    state_.set(rf::emitted_readable);
    call_soon([this] { emit_readable_tick(); });
  }
}

// Node: emitReadable_().
void readable::emit_readable_tick() noexcept {
  if (!state_.has(rf::destroyed | rf::errored) && (state_.length || state_.has(rf::ended))) {
    emit(event::readable);
    state_.clear(rf::emitted_readable);
  }
  // Another 'readable' is owed if not flowing (flow() takes care of that),
  // not ended, and at or below the high-water mark.
  if ((state_.flags & (rf::flowing | rf::ended)) == 0 && state_.length <= state_.high_water_mark)
    state_.set(rf::need_readable);
  flow();
}

// Node: maybeReadMore(). Fill the buffer up to the high-water mark on the
// next tick, ahead of the consumer.
void readable::maybe_read_more() noexcept {
  if ((state_.flags & (rf::reading_more | rf::constructed)) == rf::constructed) {
    state_.set(rf::reading_more);
    call_soon([this] { maybe_read_more_tick(); });
  }
}

// Node: maybeReadMore_(). Reads while below the high-water mark (or while
// flowing with nothing buffered), until a read brings nothing synchronously.
void readable::maybe_read_more_tick() noexcept {
  while ((state_.flags & (rf::reading | rf::ended)) == 0 &&
         (state_.length < state_.high_water_mark || (state_.has(rf::flowing) && state_.length == 0))) {
    const std::size_t len = state_.length;
    read_impl(0, false);
    if (len == state_.length) break;  // no data came: stop spinning
  }
  state_.clear(rf::reading_more);
}

// ---- listeners

// Node: Readable.prototype.on(), after the listener is added.
void readable::listener_added(event ev) {
  if (ev == event::data) {
    state_.set(rf::data_listening);
    // So that resume() below is a no-op with a 'readable' listener (once('readable')).
    if (listener_count(event::readable) > 0) state_.set(rf::readable_listening);
    // Start flowing on the next tick, unless explicitly paused.
    if ((state_.flags & (rf::has_flowing | rf::flowing)) != rf::has_flowing) resume();
  } else if (ev == event::readable) {
    if ((state_.flags & (rf::end_emitted | rf::readable_listening)) == 0) {
      state_.set(rf::readable_listening | rf::need_readable | rf::has_flowing);
      state_.clear(rf::flowing | rf::emitted_readable);
      if (state_.length) {
        emit_readable();
      } else if (!state_.has(rf::reading)) {
        call_soon([this] { read_impl(0, false); });  // Node: nReadingNextTick()
      }
    }
  }
}

// Node: the part of removeListener() that follows the removal. A 'readable'
// listener's removal is looked at on the next tick, after the 'readable' in
// progress, so that once('readable') cycles keep working.
void readable::listener_removed(event ev) noexcept {
  if (ev == event::readable) {
    call_soon([this] { update_readable_listening(); });
  } else if (ev == event::data && listener_count(event::data) == 0) {
    state_.clear(rf::data_listening);
  }
}

// Node: Readable.prototype.removeAllListeners(ev). (Node does not clear
// dataListening here; neither does sluice.)
void readable::all_listeners_removed(event ev) noexcept {
  if (ev == event::readable) call_soon([this] { update_readable_listening(); });
}

// Node: updateReadableListening().
void readable::update_readable_listening() noexcept {
  if (listener_count(event::readable) > 0)
    state_.set(rf::readable_listening);
  else
    state_.clear(rf::readable_listening);

  if ((state_.flags & (rf::has_paused | rf::paused | rf::resume_scheduled)) == (rf::has_paused | rf::resume_scheduled)) {
    // Flowing must be true now, or the resume_tick() to come will not flow.
    state_.set(rf::has_flowing | rf::flowing);
  } else if (state_.has(rf::data_listening)) {
    resume();
  } else if (!state_.has(rf::readable_listening)) {
    state_.clear(rf::has_flowing | rf::flowing);
  }
}

// ---- flowing mode

// Node: Readable.prototype.resume(). Flows only without a 'readable'
// listener, but is remembered either way.
readable& readable::resume() {
  if (!state_.has(rf::flowing)) {
    state_.set(rf::has_flowing);
    if (!state_.has(rf::readable_listening))
      state_.set(rf::flowing);
    else
      state_.clear(rf::flowing);
    schedule_resume();
  }
  state_.set(rf::has_paused);
  state_.clear(rf::paused);
  return *this;
}

// Node: resume(stream, state), the internal one.
void readable::schedule_resume() noexcept {
  if (!state_.has(rf::resume_scheduled)) {
    state_.set(rf::resume_scheduled);
    call_soon([this] { resume_tick(); });
  }
}

// Node: resume_tick().
void readable::resume_tick() noexcept {
  if (!state_.has(rf::reading)) read_impl(0, false);
  state_.clear(rf::resume_scheduled);
  emit(event::resume);
  flow();
  if ((state_.flags & (rf::flowing | rf::reading)) == rf::flowing) read_impl(0, false);
}

// Node: Readable.prototype.pause().
readable& readable::pause() {
  if ((state_.flags & (rf::has_flowing | rf::flowing)) != rf::has_flowing) {
    state_.set(rf::has_flowing);
    state_.clear(rf::flowing);
    emit(event::pause);
  }
  state_.set(rf::has_paused | rf::paused);
  return *this;
}

// Node: flow(). Differs from Node: after flow_budget chunks the rest flow
// from an immediate (one batch a turn), so that a source that is always
// ready, read by consumers that all complete at once (readable_from() over a
// range, through a transform, into a synchronous sink), cannot keep timers,
// posts, signals and fds out for ever: its flow() would never return.
// Node's would not either; there, the sink's I/O is what makes its loop
// turn. Below the budget the order is Node's.
void readable::flow() noexcept {
  constexpr std::size_t flow_budget = 1024;
  for (std::size_t n = 0; state_.has(rf::flowing); ++n) {
    if (n == flow_budget) {
      loop_->set_immediate([this] { flow(); }, static_cast<detail::stream_side*>(this));
      return;
    }
    if (!read_impl(0, true)) return;
  }
}

// Node: fromList(). Takes n bytes (one chunk in object mode) off the
// buffer; state.length is the caller's to update.
std::optional<std::string> readable::from_list(std::size_t n) {
  if (state_.length == 0) return std::nullopt;
  assert(!buffer_.empty());

  if (state_.has(rf::object_mode)) return buffer_.take_front();

  if (n >= state_.length) {
    // Read it all, emptying the buffer.
    if (buffer_.size() == 1) return buffer_.take_front();
    std::string ret;
    ret.reserve(state_.length);
    while (!buffer_.empty()) ret += buffer_.take_front();
    return ret;
  }

  const std::string_view head = buffer_.front();
  if (n < head.size()) {
    // Only part of the first chunk: copy those bytes, leave the rest in place.
    std::string ret(head.substr(0, n));
    buffer_.consume_front(n);
    return ret;
  }
  if (n == head.size()) return buffer_.take_front();  // a perfect match

  // Spans several chunks.
  std::string ret;
  ret.reserve(n);
  while (!buffer_.empty()) {
    const std::string_view data = buffer_.front();
    if (n > data.size()) {
      n -= data.size();
      ret += buffer_.take_front();
    } else {
      if (n == data.size()) {
        ret += buffer_.take_front();
      } else {
        ret.append(data.substr(0, n));
        buffer_.consume_front(n);
      }
      break;
    }
  }
  return ret;
}

// Node: endReadable().
void readable::end_readable() noexcept {
  if (!state_.has(rf::end_emitted)) {
    state_.set(rf::ended);
    call_soon([this] { end_readable_nt(); });
  }
}

// Node: endReadableNT(). Checks that no unshift() came in the meantime.
void readable::end_readable_nt() noexcept {
  if ((state_.flags & (rf::errored | rf::close_emitted | rf::end_emitted)) == 0 && state_.length == 0) {
    state_.set(rf::end_emitted);
    emit(event::end);
    if (writable_side_ && writable_side_->is_writable() && !allow_half_open_) {
      // Node: endWritableNT(): a duplex that may not stay half open ends
      // its writable side when its readable side has ended.
      call_soon([this] {
        if (writable_side_->is_writable() && !writable_side_->writable_ended() && !destroyed()) writable_side_->end();
      });
    } else if (state_.has(rf::auto_destroy)) {
      // A duplex is destroyed once its writable side has finished too.
      if (!writable_side_ || (writable_side_->writable_state().has(detail::wflag::auto_destroy) &&
                              writable_side_->writable_state().has(detail::wflag::finished | detail::wflag::not_writable)))
        destroy();
    }
  }
}

// ---- destroy (Node: destroyImpl.destroy, in destroy.cc)

// A duplex's destroy is its writable side's (Node: Duplex.prototype.destroy
// is Writable.prototype.destroy).
readable& readable::destroy(std::error_code err) {
  SLUICE_ASSERT_THREAD(state_.owner_thread, "readable::destroy()");
  if (writable_side_)
    writable_side_->destroy(err);
  else
    detail::destroy_impl::destroy(this, nullptr, err);
  return *this;
}

// Node: errorOrDestroy().
void readable::error_or_destroy(std::error_code err, bool is_sync) noexcept {
  detail::destroy_impl::error_or_destroy(this, writable_side_, err, is_sync);
}

// Differs from Node: a C++ object can go away while piping. Its listeners on
// the destinations are taken off (without 'unpipe': drop_pipe_links(), in
// pipe.cc), deferred work is dropped, and the source is destroyed if the
// stream was not.
readable::~readable() {
  drop_soon();
  drop_pipe_links();
  if (!destroyed()) source_->destroy({});
}

// The source's side of the seam (sources/source.h).
bool readable::source_push(std::string_view chunk) { return push(chunk); }
bool readable::source_push_eof() { return push_eof(); }
void readable::on_source_error(std::error_code ec) noexcept { destroy(ec); }

}  // namespace sluice
