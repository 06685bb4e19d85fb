// writable: Node v20's Writable (lib/internal/streams/writable.js), over a sink.
#pragma once

#include <cstddef>
#include <memory>
#include <optional>
#include <iterator>
#include <utility>
#include <span>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

#include <fmt/core.h>

#include "sluice/base/assert.h"
#include "sluice/loop/emitter.h"
#include "sluice/loop/loop.h"
#include "sluice/queue/write_queue.h"
#include "sluice/sinks/sink.h"
#include "sluice/stream/detail/print.h"
#include "sluice/stream/detail/shutdown.h"
#include "sluice/stream/detail/stream_side.h"
#include "sluice/stream/detail/writable_state.h"

namespace sluice {

class readable;
class writable;

struct writable_options {
  /// write() returns false once this many bytes (objects, in object mode)
  /// are pending. Unset means get_default_high_water_mark(object_mode) when
  /// the stream is made (Node v20: 16384 bytes, or 16 objects).
  std::optional<std::size_t> high_water_mark{};
  /// Count writes instead of bytes against the high-water mark.
  bool object_mode = false;
  /// destroy() after 'finish' and after an error (Node's autoDestroy).
  bool auto_destroy = true;
  /// Emit 'close' after destroy (Node's emitClose).
  bool emit_close = true;
  /// sluice's own hard cap, in bytes (objects, in object mode); unset means
  /// none, as in Node. A write that would take writable_length() past it is
  /// refused: write() returns false, nothing is buffered, and its callback
  /// gets errc::buffer_full (ERR_SLUICE_BUFFER_FULL) on a later tick, as
  /// any write callback does. The stream stays usable ('error' is not
  /// emitted): once 'drain' comes, or the callbacks of what it holds, a
  /// write is accepted again. A producer that ignores write()'s false
  /// return (Node's #39144) so loses writes instead of memory:
  /// refused_writes() counts them. A single chunk larger than the cap is
  /// always refused. Unset, it costs write() nothing.
  ///
  ///     auto out = sluice::make_fd_writable(fd, false, {.max_buffered = 64 << 20});
  ///     out->write(line, [](std::error_code ec) {
  ///       if (ec == sluice::errc::buffer_full) ++dropped;  // the stream goes on
  ///     });
  std::optional<std::size_t> max_buffered{};
  /// The loop that runs the stream's deferred work; null means loop::current().
  loop* event_loop = nullptr;
};

/// A Writable with Node's semantics: write() buffers and returns false past
/// the high-water mark, 'drain' says when to go on, cork()/uncork() batch
/// writes into one writev, end() runs the sink's final and then 'finish',
/// destroy(err) gives 'error' then 'close'. Callbacks and events never run
/// inside write() or end(): they come from the loop, as in Node.
///
///     auto out = sluice::make_fd_writable(STDOUT_FILENO);
///     out->on(sluice::event::error, [](std::error_code ec) { report(ec); });
///     if (!out->write("line\n", [](std::error_code ec) { ... }))
///       out->once(sluice::event::drain, [&] { write_more(); });
///     out->end();
///     sluice::loop::current().run();
///
/// Every write's callback is called exactly once. A writable is used from
/// its loop's thread only, and must outlive the sink calls it has started.
///
/// Over a sink that can write synchronously (fd, file, log file, worker),
/// nothing accepted by write() is lost when the program does not end the
/// stream: the destructor writes what is pending before it returns (and
/// then calls back with success), and so do exit() and the destruction of
/// the stream's loop while it is alive (see stream/detail/shutdown.h).
// sink_host comes first so that it is the primary base: a sink's completion
// reaches on_write() with no adjustment of `this`. Private: only the sink,
// through write_done and final_done, calls it. alignas: the emitter (a
// virtual base, 16-aligned for its inline listener) sets alignof(writable),
// which GCC's base constructor assumes with aligned stores, but the ABI
// places a base by the alignment of its own part: a duplex's writable, after
// the readable, could sit at 8 mod 16 and crash there.
class alignas(alignof(emitter)) writable : private sink_host, public virtual emitter, protected detail::stream_side {
 public:
  using detail::stream_side::readable_side;
  using detail::stream_side::writable_side;

  explicit writable(std::unique_ptr<sink> s, const writable_options& options = {});
  ~writable();
  writable(const writable&) = delete;
  writable& operator=(const writable&) = delete;

  /// Node: write(chunk, cb). Chunks up to 4 KiB are copied into the stream's
  /// arena (no allocation in steady state); larger views are copied once.
  /// Returns false once the stream holds high_water_mark or more, or after
  /// an error or destroy(); the chunk is accepted all the same, unless the
  /// stream has ended or is destroyed, in which case `cb` gets the error,
  /// or unless it would take the stream past max_buffered (see
  /// writable_options), in which case `cb` gets errc::buffer_full.
  bool write(std::string_view chunk, write_cb&& cb) {
    SLUICE_ASSERT_THREAD(state_.owner_thread, "writable::write()");
    if (cb ? joins_open_run(chunk.size(), cb) : joins_open_run(chunk.size())) [[likely]]
      return join_open_run(chunk);
    return write_slow(chunk, std::move(cb));
  }
  /// The same with one callback for many writes, as Node code passes one
  /// function to each write(chunk, cb): `cb` is copied only when the write
  /// cannot join the run of writes before it, so a write is neither a
  /// callback made nor one destroyed. `cb` must be empty or copyable() (a
  /// function pointer, or a lambda that captures pointers and numbers);
  /// another target throws stream_error (ERR_INVALID_ARG_TYPE), as Node's
  /// write() throws for a callback that is not a function. Each write is
  /// called back once, as with a callback of its own.
  ///
  ///     const sluice::write_cb done = [&counts](std::error_code ec) { ++counts[!ec]; };
  ///     for (const auto& line : lines) out->write(line, done);
  bool write(std::string_view chunk, const write_cb& cb) {
    SLUICE_ASSERT_THREAD(state_.owner_thread, "writable::write()");
    // An empty `cb` never matches here: write_shared() tries it as a write
    // without a callback.
    if (joins_open_run(chunk.size(), cb)) [[likely]]
      return join_open_run(chunk);
    return write_shared(chunk, cb);
  }
  /// The same without a callback: no callback to make, compare or destroy.
  bool write(std::string_view chunk) {
    SLUICE_ASSERT_THREAD(state_.owner_thread, "writable::write()");
    if (joins_open_run(chunk.size())) [[likely]]
      return join_open_run(chunk);
    return write_slow(chunk, write_cb{});
  }
  bool write(std::span<const std::byte> chunk, write_cb cb = {});
  bool write(const char* chunk, write_cb cb = {}) { return write(std::string_view(chunk), std::move(cb)); }
  /// Takes the chunk by ownership: never copied.
  bool write(std::string&& chunk, write_cb cb = {});
  bool write(std::vector<std::byte>&& chunk, write_cb cb = {});
  /// Shares an immutable buffer: `bytes` must stay valid while `keep` lives.
  bool write(std::shared_ptr<const void> keep, std::string_view bytes, write_cb cb = {});

  /// Formats with fmt (format strings checked at compile time) straight into
  /// the stream's pending buffer: no temporary string, and no allocation per
  /// line in steady state. Otherwise exactly write(): the same return value,
  /// the same rules after end() and destroy(). A line longer than 4 KiB is
  /// owned on the heap. A line longer than the room left in the buffer's
  /// block (1 KiB at least) is formatted a second time, into room of its
  /// size: its arguments' formatters run twice.
  ///
  ///     log->print("{} {} request id={} status={}\n", ts, level, id, status);
  template <class... Args>
  bool print(fmt::format_string<Args...> format, Args&&... args) {
    return vprint(format, fmt::make_format_args(args...));
  }
  bool vprint(fmt::string_view format, fmt::format_args args, write_cb cb = {});

  /// The same with a compiled format string (fmt's FMT_COMPILE): the format
  /// is turned into code at compile time, so nothing parses it per line
  /// (docs/benchmarks.md has the figures). The same buffer, return value and
  /// rules as print() above.
  ///
  ///     #include "sluice/stream/print_compiled.h"  // or sluice.h
  ///     log->print(FMT_COMPILE("{} {} request id={} status={}\n"), ts, level, id, status);
  ///
  /// Defined in sluice/stream/print_compiled.h, which brings <fmt/compile.h>.
  template <class S, class... Args>
    requires detail::compiled_format<S>
  bool print(const S& format, Args&&... args);

  /// Node: end(cb): no more writes; 'finish' follows once all are done.
  /// `cb` is called after the finish, or with the error that prevented it.
  writable& end(write_cb cb = {});
  /// Node: end(chunk, cb).
  writable& end(std::string_view chunk, write_cb cb = {});
  writable& end(const char* chunk, write_cb cb = {}) { return end(std::string_view(chunk), std::move(cb)); }

  void cork() noexcept;
  void uncork();
  /// sluice's own: hands the writes that coalescing holds (see
  /// sink_caps::coalesce) to the sink now rather than at the end of the
  /// turn. Corked writes stay corked. flush_sync() starts with it.
  void flush_held() noexcept;

  /// Node: destroy(err). Pending callbacks get ERR_STREAM_DESTROYED (or `err`);
  /// 'error' (if err) and then 'close' follow on the next tick.
  writable& destroy(std::error_code err = {});

  // Node's public state, snake_case.
  std::size_t writable_length() const noexcept { return state_.length; }
  bool writable_need_drain() const noexcept;
  bool writable_ended() const noexcept { return state_.has(detail::wflag::ending); }
  bool writable_finished() const noexcept { return state_.has(detail::wflag::finished); }
  std::uint32_t writable_corked() const noexcept { return state_.corked; }
  std::size_t writable_high_water_mark() const noexcept { return state_.high_water_mark; }
  bool writable_object_mode() const noexcept { return state_.has(detail::wflag::object_mode); }
  bool destroyed() const noexcept { return state_.has(detail::wflag::destroyed); }
  bool closed() const noexcept { return state_.has(detail::wflag::closed); }
  /// Node's `writable` property: true until end(), destroy() or an error
  /// (never, for a duplex made with writable = false).
  bool is_writable() const noexcept;
  /// sluice's own: the writes refused for writable_options::max_buffered.
  std::size_t refused_writes() const noexcept { return state_.refused_writes; }
  /// The first error the stream met, or none.
  std::error_code errored() const noexcept {
    return state_.has(detail::wflag::errored) ? errored_ : std::error_code{};
  }
  loop& event_loop() const noexcept { return *loop_; }
  sink& get_sink() const noexcept { return *sink_; }

 protected:
  /// The writable half of Node's _destroy(): the sink's destroy.
  void destroy_io(std::error_code err, destroy_done done) noexcept override;
  // Duplex and Transform set up and read the side's state, as Node's
  // duplex.js and transform.js reach this._writableState.
  detail::writable_state state_;

  /// sluice's own: the stream's loop is going away (see shutdown.h); a duplex
  /// moves its readable side too.
  virtual void rehome(loop& l) noexcept;
  /// Node: errorOrDestroy(this, err, sync).
  void error_or_destroy(std::error_code err, bool sync) noexcept;

 private:
  // Node: _writableState, read-only: the flag word and counters that pipe()
  // (readable's), finished() and stream_ref read. Not an API: its type is an
  // internal one.
  const detail::writable_state& writable_state() const noexcept { return state_; }
  friend class readable;
  friend class stream_ref;
  friend struct detail::destroy_impl;

  // The sink's side of the seam (sink_host): Node's onwrite, the callback of
  // _final, and an error met outside the sink's calls.
  void on_write(std::error_code ec, std::size_t landed) noexcept final;
  void on_finish(std::error_code ec) noexcept final;
  write_cb take_write_cb() noexcept final;
  void on_sink_error(std::error_code ec) noexcept final;
  void on_sink_caps(const sink_caps& caps) noexcept final;

  writable& end_impl(const std::string_view* chunk_or_null, write_cb cb);
  bool joins_open_run(std::size_t size) const noexcept;
  bool joins_open_run(std::size_t size, const write_cb& cb) const noexcept;
  bool runs_allowed() const noexcept;
  bool join_open_run(std::string_view chunk) noexcept;
  bool may_open_run(const detail::write_req& r) const noexcept;
  bool joins(const detail::write_req& last, const detail::write_req& r) const noexcept;
  // The stream stops taking writes inline (an error, destroy()): see
  // runs_allowed(). destroy.cc calls it where it sets those flags.
  void close_run() noexcept { buffered_.close_run(); }
  void call_each(detail::write_req& r, std::error_code ec) noexcept;
  bool write_slow(std::string_view chunk, write_cb&& cb);
  bool write_shared(std::string_view chunk, const write_cb& cb);
  // A write after end() or destroy(): an error, for the callback and the stream.
  bool fail_after_end(write_cb cb);
  bool write_guarded(std::string_view chunk, write_cb cb);
  bool over_cap(std::size_t bytes) const noexcept;
  // A write over max_buffered: refused, the stream goes on (no error).
  bool refuse_over_cap(write_cb cb);
  bool print_start(detail::print_room& room);
  bool print_commit(detail::print_room& room, std::size_t size, write_cb&& cb);
  bool write_formatted(std::string_view line, write_cb&& cb);
  template <class Owned>
  bool write_owned(Owned&& chunk, std::string_view bytes, write_cb cb);
  detail::write_req& make_req(std::string_view chunk);
  std::size_t chunk_len(const detail::write_req& r) const noexcept;
  bool accept(detail::write_req& req, write_cb cb);
  bool write_or_buffer(detail::write_req& req);
  void write_now(detail::write_req& req, std::size_t len);
  void start_coalescing();
  void do_write(bool writev, std::size_t len);
  void on_write_error(std::error_code ec, detail::write_queue& reqs, std::size_t n, std::size_t landed) noexcept;
  void after_write(detail::write_queue& reqs, std::size_t n) noexcept;
  void call_back(detail::write_queue& reqs, std::size_t n, std::error_code ec) noexcept;
  void error_buffer() noexcept;
  void clear_buffer() noexcept;
  void flush_coalesced() noexcept;
  bool need_finish() const noexcept;
  void prefinish() noexcept;
  void finish_maybe(bool sync) noexcept;
  void finish() noexcept;
  void call_finished_callbacks(std::error_code ec) noexcept;
  void call_back_soon(write_cb cb, std::error_code ec);
  void write_pending_sync() noexcept;
  static void on_loop_close(loop::close_hook& hook, loop& l) noexcept;
  static void on_exit(detail::shutdown_link& link) noexcept;

  std::unique_ptr<sink> sink_;
  detail::req_pool pool_;
  detail::buffered_queue buffered_;  // Node: state.buffered
  detail::write_queue writing_;   // the requests of the sink call in flight
  detail::write_queue done_;      // completed synchronously; callbacks wait for the tick
  detail::write_queue failed_;    // failed synchronously; callbacks wait for the tick
  // See call_back_soon(): a FIFO from owed_head_ on. A vector, not a deque,
  // because a deque allocates when it is made, and most streams owe nothing.
  std::vector<std::pair<write_cb, std::error_code>> owed_;
  std::vector<write_cb> on_finished_;  // end() callbacks
  // 32 bits, beside caps_ (three bools) in one word: the word the open run
  // (buffered_queue) takes keeps sizeof(net::socket) at 928.
  std::uint32_t owed_head_ = 0;
  // The sink's capabilities, read once when the stream is built (and again
  // if the sink changes them: sink::set_caps()), so that the write path asks
  // the sink no virtual question.
  sink_caps caps_;
  detail::write_queue landed_;  // written by write_pending_sync(); callbacks owed
  // sluice's own shutdown guarantee (see shutdown.h): linked only when the
  // sink can write synchronously.
  loop::close_hook loop_close_;
  detail::shutdown_link shutdown_;
};

// write()'s fast path, inline in the caller: the chunk joins the open run
// of buffered_ (buffered_queue::open_run()): the same size as its chunks,
// copied right after the last of them in the arena, with the same callback
// or, as they, none (the run's key: a write without a callback compares its
// size alone). Then write() is Node's writeOrBuffer() down its buffering
// branch: a copy, a bump, `length` and `pendingcb`. Everything else goes to
// write_slow() (writable.cc), which follows Node step by step and opens the
// runs this joins. A run is open only while write() would buffer its chunk
// and return the high-water mark's answer alone (runs_allowed()), and is
// closed wherever that stops (end(), destroy(), an error, the end of the
// sink call or of the turn's coalescing): the key compare stands for the
// flag tests.
inline bool writable::joins_open_run(std::size_t size) const noexcept {
  SLUICE_ASSERT(buffered_.open_key() == SIZE_MAX || runs_allowed());
  return buffered_.joins(size, pool_.arena.next());
}

// The same for a write with a callback: the key has the callback bit
// whatever `cb` holds, so an empty one never matches (the run then has a
// callback, to which `cb` is compared: the same target, trivially copyable).
inline bool writable::joins_open_run(std::size_t size, const write_cb& cb) const noexcept {
  SLUICE_ASSERT(buffered_.open_key() == SIZE_MAX || runs_allowed());
  return buffered_.joins(detail::buffered_queue::run_key(size, true), pool_.arena.next()) &&
         cb.same_copyable_target(buffered_.open_cb());
}

// Node: writeOrBuffer(), its buffering branch, for a chunk that joins the
// open run. The bytes are copied first, at the arena's next() that
// joins_open_run() read: every store of the copy may alias the stream, so
// its fields are read after it, once each.
[[gnu::always_inline]] inline bool writable::join_open_run(std::string_view chunk) noexcept {
  const std::size_t size = chunk.size();
  std::byte* const at = pool_.arena.next();
  detail::byte_arena::copy_to(at, chunk.data(), size);
  pool_.arena.bump(size);  // the run's end too
  ++state_.pending_cb;
  const std::size_t length = state_.length + size;
  state_.length = length;
  const bool ret = length < state_.high_water_mark;
  if (!ret) state_.flags |= detail::wflag::need_drain;
  return ret;
}

}  // namespace sluice
