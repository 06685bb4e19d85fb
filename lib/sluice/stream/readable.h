// readable: Node v20's Readable (lib/internal/streams/readable.js), over a
// source, with Readable.prototype.pipe() into a sluice::writable.
#pragma once

#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>
#include <utility>
#include <vector>

#include "sluice/loop/emitter.h"
#include "sluice/loop/loop.h"
#include "sluice/queue/read_buffer.h"
#include "sluice/sources/source.h"
#include "sluice/stream/detail/readable_state.h"
#include "sluice/stream/detail/stream_side.h"

namespace sluice {

class writable;

struct readable_options {
  /// The source is asked for more (read(n)) while fewer than this many bytes
  /// (chunks, in object mode) are buffered, and push() returns false past it.
  /// Unset means get_default_high_water_mark(): Node v20's 16384 bytes, or 16
  /// chunks, unless set_default_high_water_mark() changed it. 0 is valid:
  /// the source is only read when a consumer asks.
  std::optional<std::size_t> high_water_mark{};
  /// Count chunks instead of bytes, and never split or merge chunks on read.
  bool object_mode = false;
  /// destroy() after 'end' and after an error (Node's autoDestroy).
  bool auto_destroy = true;
  /// Emit 'close' after destroy (Node's emitClose).
  bool emit_close = true;
  /// The loop that runs the stream's deferred work; null means loop::current().
  loop* event_loop = nullptr;
};

/// Node: the options of pipe(dest, options).
struct pipe_options {
  /// Call dest.end() when the source ends.
  bool end = true;
};

/// A Readable with Node's semantics. A source push()es chunks into it; a
/// consumer takes them in paused mode with read() (after 'readable') or in
/// flowing mode through 'data' events, which start as soon as a 'data'
/// listener is added or resume() is called. push_eof() ends the data; 'end'
/// follows once the buffer is empty. pipe() feeds a writable with
/// backpressure. Events never run inside push() unless Node runs them so.
///
///     sluice::readable r(std::make_unique<my_source>());
///     r.on(sluice::event::data, [](std::string_view chunk) { consume(chunk); });
///     r.on(sluice::event::end, [] { done(); });
///     sluice::loop::current().run();
///
/// Adding a 'data' listener starts flowing and adding a 'readable' listener
/// stops it, as Node's Readable.prototype.on does, through whichever class
/// the listener is added (the emitter's hooks; prepend_listener() switches
/// nothing, as in Node). A readable is used from its loop's thread only. A writable
/// it pipes into must outlive the pipe: the pipe ends at the writable's
/// 'finish' or 'close', at unpipe(), or when this readable is destroyed.
// source_host first, as writable's sink_host: the primary base. Private:
// only the source, through its push(), push_eof() and report_error(), calls
// it. alignas: as writable's (the part of a readable within a duplex or a
// class of the user's keeps the alignment its constructor assumes).
class alignas(alignof(emitter)) readable : private source_host, public virtual emitter, protected detail::stream_side {
 public:
  using detail::stream_side::readable_side;
  using detail::stream_side::writable_side;

  explicit readable(std::unique_ptr<source> s, const readable_options& options = {});
  ~readable();
  readable(const readable&) = delete;
  readable& operator=(const readable&) = delete;

  /// Node: push(chunk). Buffers the chunk (or emits it as 'data' at once, in
  /// flowing mode with nothing buffered). Returns false once high_water_mark
  /// or more is buffered, after push_eof(), and when destroyed or errored.
  /// An empty chunk adds nothing (in byte mode) but ends a pending read.
  /// A push after push_eof() errors the stream with ERR_STREAM_PUSH_AFTER_EOF.
  bool push(std::string_view chunk);
  /// Takes the chunk by ownership: moved into the buffer, never copied.
  bool push(std::string&& chunk);
  bool push(const char* chunk) { return push(std::string_view(chunk)); }
  /// Node: push(null). The end of the data; always returns false.
  bool push_eof();

  /// Node: unshift(chunk). Puts a chunk back at the front of the buffer.
  /// After 'end' this errors the stream with ERR_STREAM_UNSHIFT_AFTER_END_EVENT.
  bool unshift(std::string_view chunk);
  bool unshift(std::string&& chunk);
  bool unshift(const char* chunk) { return unshift(std::string_view(chunk)); }

  /// Node: read(). Returns what is buffered (in flowing mode, one chunk; in
  /// object mode, one chunk) or nothing, and asks the source for more.
  /// Cost: a chunk read whole is moved out of the buffer, not copied; several
  /// chunks read at once are joined into one string (a copy, as in Node).
  std::optional<std::string> read();
  /// Node: read(n). Returns exactly n bytes, or nothing if fewer are buffered
  /// (all that is left, once ended). Reading part of a chunk copies those n
  /// bytes only; the rest stays in place. read(0) only triggers a read.
  /// Throws stream_error (ERR_OUT_OF_RANGE) for n above 1 GiB, as Node does.
  std::optional<std::string> read(std::size_t n);

  /// Node: pause(). Leaves flowing mode; emits 'pause' if it was flowing.
  readable& pause();
  /// Node: resume(). Enters flowing mode ('resume' on the next tick).
  readable& resume();
  /// Node: isPaused(): pause() was called last, or flowing is false.
  bool is_paused() const noexcept;

  /// Node: pipe(dest, options). Writes every chunk to dest, pausing while
  /// dest.write() returns false and resuming on its 'drain'; ends dest at
  /// this stream's 'end' unless options.end is false. dest emits 'pipe' now
  /// and 'unpipe' when the pipe ends. Returns dest.
  writable& pipe(writable& dest, const pipe_options& options = {});
  /// Node: unpipe(dest). Stops piping into dest (pausing if it was the last).
  readable& unpipe(writable& dest);
  /// Node: unpipe(). Stops piping into every destination.
  readable& unpipe();

  /// Node: destroy(err). 'error' (if err) and then 'close' follow on the
  /// next tick; nothing more is read or emitted as data.
  readable& destroy(std::error_code err = {});

  // Node's public state, snake_case.
  std::size_t readable_length() const noexcept { return state_.length; }
  /// Node: readableFlowing: null (no consumer yet), true or false.
  std::optional<bool> readable_flowing() const noexcept {
    if (!state_.has(detail::rflag::has_flowing)) return std::nullopt;
    return state_.has(detail::rflag::flowing);
  }
  /// Node: _readableState.ended: push_eof() was seen ('end' may be owed;
  /// readable_ended() says when it was emitted).
  bool eof_pushed() const noexcept { return state_.has(detail::rflag::ended); }
  /// Node: readableEnded: 'end' was emitted.
  bool readable_ended() const noexcept { return state_.has(detail::rflag::end_emitted); }
  std::size_t readable_high_water_mark() const noexcept { return state_.high_water_mark; }
  bool readable_object_mode() const noexcept { return state_.has(detail::rflag::object_mode); }
  /// Node: readableDidRead: 'data' was emitted at least once.
  bool readable_did_read() const noexcept { return state_.has(detail::rflag::data_emitted); }
  /// Node: readableAborted: destroyed or errored before 'end'.
  bool readable_aborted() const noexcept {
    return state_.has(detail::rflag::destroyed | detail::rflag::errored) &&
           !state_.has(detail::rflag::end_emitted);
  }
  bool destroyed() const noexcept { return state_.has(detail::rflag::destroyed); }
  bool closed() const noexcept { return state_.has(detail::rflag::closed); }
  /// Node's `readable` property: false once destroyed, errored or ended
  /// (always, for a duplex made with readable = false).
  bool is_readable() const noexcept {
    return !state_.has(detail::rflag::destroyed | detail::rflag::error_emitted | detail::rflag::end_emitted |
                       detail::rflag::not_readable);
  }
  /// The first error the stream met, or none.
  std::error_code errored() const noexcept {
    return state_.has(detail::rflag::errored) ? errored_ : std::error_code{};
  }
  /// Node: _readableState.pipes.length.
  std::size_t pipes_count() const noexcept { return pipes_.size(); }
  loop& event_loop() const noexcept { return *loop_; }
  source& get_source() const noexcept { return *source_; }

 protected:
  // Duplex and Transform set up and read the side's state, as Node's
  // duplex.js and transform.js reach this._readableState.
  detail::readable_state state_;
  bool allow_half_open_ = true;  // Node: Duplex's allowHalfOpen

  /// The stream moves to another loop (a duplex whose loop went: see
  /// shutdown.h).
  void rehome(loop& l) noexcept;
  /// Node: errorOrDestroy(this, err, sync).
  void error_or_destroy(std::error_code err, bool sync) noexcept;

 private:
  // Node: _readableState, read-only: the flag word and counters that
  // finished(), async iteration and stream_ref read. Not an API: its type is
  // an internal one.
  const detail::readable_state& readable_state() const noexcept { return state_; }
  friend class writable;
  friend class stream_ref;
  friend class async_iterator;
  friend struct detail::destroy_impl;

  // The source's side of the seam (source_host).
  bool source_push(std::string_view chunk) final;
  bool source_push_eof() final;
  void on_source_error(std::error_code ec) noexcept final;
  friend readable& readable_of(source_host& h) noexcept;

  struct pipe_link;
  // A chunk on its way in: `bytes` views it; `owned`, when set, may be moved
  // into the buffer instead of copied.
  struct chunk_ref {
    std::string_view bytes;
    std::string* owned;
    std::string take() const { return owned ? std::move(*owned) : std::string(bytes); }
  };

  bool push_chunk(chunk_ref c);
  bool unshift_chunk(chunk_ref c);
  bool readable_add_chunk_push_byte_mode(chunk_ref c);
  bool readable_add_chunk_push_object_mode(chunk_ref c);
  bool readable_add_chunk_unshift_byte_mode(chunk_ref c);
  bool readable_add_chunk_unshift_object_mode(chunk_ref c);
  bool readable_add_chunk_unshift_value(chunk_ref c);
  bool can_push_more() const noexcept;
  void add_chunk(chunk_ref c, bool add_to_front);
  std::size_t how_much_to_read(std::size_t n, bool all) const noexcept;
  std::optional<std::string> read_impl(std::size_t n, bool all);
  void on_eof_chunk() noexcept;
  void emit_readable() noexcept;
  void emit_readable_tick() noexcept;
  void maybe_read_more() noexcept;
  void maybe_read_more_tick() noexcept;
  void pipe_on_drain(writable& dest) noexcept;
  // Node: Readable.prototype.on, removeListener and removeAllListeners.
  void listener_added(event ev) override;
  void listener_removed(event ev) noexcept override;
  void all_listeners_removed(event ev) noexcept override;
  void update_readable_listening() noexcept;
  void schedule_resume() noexcept;
  void resume_tick() noexcept;
  void flow() noexcept;
  std::optional<std::string> from_list(std::size_t n);
  void end_readable() noexcept;
  void end_readable_nt() noexcept;
  void emit_data(std::string_view chunk) noexcept;
  void clear_await_drain() noexcept;
  void drop_pipe_links() noexcept;
  bool await_drain_set() const noexcept;
  void destroy_io(std::error_code err, inline_function<void(std::error_code), 16> done) noexcept override;

  std::unique_ptr<source> source_;
  detail::read_buffer buffer_;  // Node: state.buffer
  std::vector<writable*> pipes_;  // Node: state.pipes
  // Node: state.awaitDrainWriters: null or one writable (await_drain_), or a
  // set of them (await_drain_many_) while multi_await_drain is set.
  writable* await_drain_ = nullptr;
  std::vector<writable*> await_drain_many_;
  // The listeners of each pipe() not yet cleaned up, so that the destructor
  // can take them off the destinations.
  std::vector<std::shared_ptr<pipe_link>> links_;
};

/// The readable behind a source's host: what source::stream() returns, for
/// a source above the stream layer.
inline readable& readable_of(source_host& h) noexcept { return static_cast<readable&>(h); }

}  // namespace sluice
