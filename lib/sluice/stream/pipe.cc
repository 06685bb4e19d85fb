// The C++ lifetime of Node's Readable.prototype.pipe() and unpipe(): the
// closures of one pipe() call (pipe_link), the guard that sees a destination
// destroyed while piped (dest_guard), and the await-drain bookkeeping. The
// read state machine they drive is in readable.cc; each function names its
// Node counterpart and keeps its branches in Node's order.
#include <algorithm>
#include <memory>
#include <string_view>
#include <utility>
#include <vector>

#include "sluice/stream/detail/destroy.h"
#include "sluice/stream/readable.h"
#include "sluice/stream/writable.h"

namespace sluice {

namespace rf = detail::rflag;

// ---- pipe

// The closures of one Readable.prototype.pipe() call: Node keeps them in the
// call's scope; here they share this object, which every listener of the
// pipe holds, so it lives until the last of them is gone.
//
// Differs from Node: C++ objects can go away while the pipe is in place.
// `src` becomes null when the readable is destroyed, `dest` when the writable
// is (see dest_guard), and every entry point then does nothing.
struct readable::pipe_link : std::enable_shared_from_this<pipe_link> {
  pipe_link(readable* s, writable* d, bool end) noexcept : src(s), dest(d), do_end(end) {}

  readable* src;
  writable* dest;
  bool do_end;               // Node: doEnd; endFn is onend, else unpipe
  bool cleaned_up = false;   // Node: cleanedUp
  bool has_ondrain = false;  // Node: ondrain is set
  bool detached = false;     // the listeners are being taken off on purpose
  listener_id on_end_id = 0;  // on src; 0 when endFn was queued instead
  listener_id on_data_id = 0;
  listener_id on_unpipe_id = 0, on_error_id = 0, on_close_id = 0, on_finish_id = 0, on_drain_id = 0;

  bool live() const noexcept { return src && dest; }

  // Node: endFn.
  void end_fn() {
    if (!live()) return;
    if (do_end)
      on_end();
    else
      unpipe();
  }

  // Node: onunpipe(). Only the first listener of an unpipe emit cleans up.
  void on_unpipe(const event_arg& a) {
    if (!live()) return;
    if (a.source == src && a.has_unpiped && !*a.has_unpiped) {
      *a.has_unpiped = true;
      cleanup();
    }
  }

  // Node: onend().
  void on_end() { dest->end(); }

  // Takes this pipe's listeners off the destination.
  void detach_from_dest() noexcept {
    detached = true;
    dest->off(event::close, on_close_id);
    dest->off(event::finish, on_finish_id);
    if (has_ondrain) dest->off(event::drain, on_drain_id);
    dest->off(event::error, on_error_id);
    dest->off(event::unpipe, on_unpipe_id);
  }

  // Node: cleanup(). Takes every listener of this pipe off both streams.
  void cleanup() {
    const auto keep = shared_from_this();
    detach_from_dest();
    if (on_end_id) src->emitter::off(event::end, on_end_id);
    src->off(event::data, on_data_id);

    cleaned_up = true;
    std::erase(src->links_, keep);

    // If the source waits for a 'drain' of this dest, it would never flow
    // again: call the drain handler now. If unsure, assume it waits.
    if (has_ondrain && src->await_drain_set() && dest->writable_state().has(detail::wflag::need_drain)) src->pipe_on_drain(*dest);
  }

  // The writable object is being destroyed with the pipe in place. Forget it
  // without a word: no 'unpipe' (its emitter is half gone). A source left
  // with no destination stops flowing, as after unpipe(), but without
  // 'pause': no listener may run while the writable is being destroyed.
  void dest_gone() noexcept {
    const auto keep = shared_from_this();
    writable* d = dest;
    dest = nullptr;
    cleaned_up = true;
    if (!src) return;
    readable& r = *src;
    std::erase(r.pipes_, d);
    if (r.await_drain_ == d) r.await_drain_ = nullptr;
    std::erase(r.await_drain_many_, d);
    if (on_end_id) r.emitter::off(event::end, on_end_id);
    r.off(event::data, on_data_id);
    std::erase(r.links_, keep);
    if (r.pipes_.empty()) {
      r.state_.set(rf::has_flowing | rf::has_paused | rf::paused);
      r.state_.clear(rf::flowing);
    }
  }

  // Node: pause(), pipe()'s own. dest.write() returned false: wait for its
  // 'drain'. Checks that dest is still piped to, as an unpipe during write()
  // would otherwise leave the source paused for good.
  void pause() {
    if (!cleaned_up) {
      auto& pipes = src->pipes_;
      if (pipes.size() == 1 && pipes[0] == dest) {
        src->await_drain_ = dest;
        src->state_.clear(rf::multi_await_drain);
      } else if (pipes.size() > 1 && std::find(pipes.begin(), pipes.end(), dest) != pipes.end()) {
        auto& many = src->await_drain_many_;
        if (std::find(many.begin(), many.end(), dest) == many.end()) many.push_back(dest);
      }
      src->pause();
    }
    if (!has_ondrain && live()) {
      // Node: pipeOnDrain(src, dest), added once and kept until cleanup.
      has_ondrain = true;
      on_drain_id = dest->on(event::drain, [self = shared_from_this()] {
        if (self->live()) self->src->pipe_on_drain(*self->dest);
      });
    }
  }

  // Node: ondata().
  void on_data(std::string_view chunk) {
    if (!live()) return;
    const bool ret = dest->write(chunk);
    if (!ret && live()) pause();
  }

  // Node: onerror(). Stop piping into a dest that failed, without hiding the
  // error: with no other listener it is re-emitted, as Node would throw it.
  void on_error(std::error_code er) {
    if (!live()) return;
    unpipe();
    if (!dest) return;
    dest->off(event::error, on_error_id);
    if (dest->listener_count(event::error) == 0) {
      if (!dest->writable_state().has(detail::wflag::error_emitted)) {
        detail::destroy_impl::error_or_destroy(*dest, er, false);  // the 'error' was emitted by hand
      } else {
        event_arg arg;
        arg.error = er;
        dest->emit(event::error, arg);
      }
    }
  }

  // Node: onclose(). 'close' and 'finish' both unpipe, once.
  void on_close() {
    if (!live()) return;
    dest->off(event::finish, on_finish_id);
    unpipe();
  }

  // Node: onfinish().
  void on_finish() {
    if (!live()) return;
    dest->off(event::close, on_close_id);
    unpipe();
  }

  // Node: unpipe(), pipe()'s own.
  void unpipe() {
    if (live()) src->unpipe(*dest);
  }
};

namespace {
// The pipe's 'unpipe' listener on the destination. It lives exactly as long
// as the pipe's hold on the destination: taken off by cleanup() or by the
// readable's destructor (both mark the link detached first), or destroyed
// with the destination's emitter, which is how the pipe learns that the
// writable object is gone.
template <class Link>
struct dest_guard {
  std::shared_ptr<Link> link;

  explicit dest_guard(std::shared_ptr<Link> l) noexcept : link(std::move(l)) {}
  dest_guard(dest_guard&& o) noexcept = default;
  dest_guard& operator=(dest_guard&&) = delete;
  ~dest_guard() {
    if (link && !link->detached && link->dest) link->dest_gone();
  }
  void operator()(const event_arg& a) const { link->on_unpipe(a); }
};
}  // namespace


// Node: state.awaitDrainWriters is truthy (a set always is, even empty).
bool readable::await_drain_set() const noexcept {
  return state_.has(rf::multi_await_drain) || await_drain_ != nullptr;
}

// Node: `awaitDrainWriters.clear()` or `awaitDrainWriters = null`, by mode.
void readable::clear_await_drain() noexcept {
  if (state_.has(rf::multi_await_drain))
    await_drain_many_.clear();
  else
    await_drain_ = nullptr;
}

// Node: Readable.prototype.pipe().
writable& readable::pipe(writable& dest, const pipe_options& options) {
  if (pipes_.size() == 1) {
    if (!state_.has(rf::multi_await_drain)) {
      state_.set(rf::multi_await_drain);
      await_drain_many_.clear();
      if (await_drain_) await_drain_many_.push_back(await_drain_);
    }
  }

  pipes_.push_back(&dest);
  auto link = std::make_shared<pipe_link>(this, &dest, options.end);
  links_.push_back(link);

  if (state_.has(rf::end_emitted))
    call_soon([link] { link->end_fn(); });
  else
    link->on_end_id = emitter::once(event::end, [link] { link->end_fn(); });  // 'end' has no mode effect

  link->on_unpipe_id = dest.on(event::unpipe, dest_guard<pipe_link>(link));
  link->on_data_id = on(event::data, [link](std::string_view chunk) { link->on_data(chunk); });
  // Before any userland 'error' listener.
  link->on_error_id = dest.prepend_listener(event::error, [link](std::error_code er) { link->on_error(er); });
  link->on_close_id = dest.once(event::close, [link] { link->on_close(); });
  link->on_finish_id = dest.once(event::finish, [link] { link->on_finish(); });

  event_arg arg;
  arg.source = this;
  dest.emit(event::pipe, arg);

  // Start the flow if it hasn't been started already.
  if (dest.writable_need_drain()) {
    link->pause();
  } else if (!state_.has(rf::flowing)) {
    resume();
  }
  return dest;
}

// Node: pipeOnDrain(src, dest), the 'drain' handler of a pipe.
void readable::pipe_on_drain(writable& dest) noexcept {
  if (!state_.has(rf::multi_await_drain) && await_drain_ == &dest) {
    await_drain_ = nullptr;
  } else if (state_.has(rf::multi_await_drain)) {
    std::erase(await_drain_many_, &dest);
  }
  const bool waiting = state_.has(rf::multi_await_drain) ? !await_drain_many_.empty() : await_drain_ != nullptr;
  if (!waiting && state_.has(rf::data_listening)) resume();
}

// Node: Readable.prototype.unpipe(dest).
readable& readable::unpipe(writable& dest) {
  if (pipes_.empty()) return *this;
  const auto it = std::find(pipes_.begin(), pipes_.end(), &dest);
  if (it == pipes_.end()) return *this;
  pipes_.erase(it);
  if (pipes_.empty()) pause();
  bool has_unpiped = false;  // Node: unpipeInfo
  event_arg arg;
  arg.source = this;
  arg.has_unpiped = &has_unpiped;
  dest.emit(event::unpipe, arg);
  return *this;
}

// Node: Readable.prototype.unpipe() with no dest: remove all.
readable& readable::unpipe() {
  if (pipes_.empty()) return *this;
  const std::vector<writable*> dests = std::move(pipes_);
  pipes_.clear();
  pause();
  for (writable* d : dests) {
    bool has_unpiped = false;
    event_arg arg;
    arg.source = this;
    arg.has_unpiped = &has_unpiped;
    d->emit(event::unpipe, arg);
  }
  return *this;
}

// The readable goes away while piping (~readable()): its listeners on the
// destinations are taken off without 'unpipe', and every listener still
// holding a link finds the source gone.
void readable::drop_pipe_links() noexcept {
  for (const auto& link : links_) {
    if (link->dest) link->detach_from_dest();
    link->cleaned_up = true;
    link->src = nullptr;
  }
  links_.clear();
}

}  // namespace sluice
