// The iterator helpers (lib/internal/streams/operators.js) over one
// iteration of a readable, Node's createAsyncIterator()
// (lib/internal/streams/readable.js): 'readable' and finished() wake it,
// read() takes each chunk, and its end destroys the stream as the
// iterator's `finally` does.
#include "sluice/stream/operators.h"

#include <deque>
#include <utility>

#include "sluice/base/errors.h"
#include "sluice/stream/finished.h"
#include "sluice/stream/stream_ref.h"
#include "sluice/stream/writable.h"

namespace sluice {

namespace {

// What a pull gives: a chunk, the end (ok), or the stream's error; or
// nothing yet (pending), and the iteration calls the waiter once there is.
struct pulled {
  enum kind_t { chunk, end, error, pending } kind;
  std::string item;
  std::error_code ec;
};

// Node: createAsyncIterator(stream).
class iteration : public std::enable_shared_from_this<iteration> {
 public:
  explicit iteration(readable& r) : r_(r) {}

  static std::shared_ptr<iteration> start(readable& r) {
    auto it = std::make_shared<iteration>(r);
    std::weak_ptr<iteration> weak = it;
    // Node: stream.on('readable', next).
    it->readable_listener_ = r.on(event::readable, [weak] {
      if (auto self = weak.lock()) self->wake();
    });
    // Node: eos(stream, { writable: false }, ...): the end, or the error.
    finished_options fo;
    fo.writable = false;
    it->cleanup_ = finished(stream_ref(r), [weak](std::error_code ec) {
      if (auto self = weak.lock()) {
        self->state_ = ec ? state::errored : state::ended;
        self->error_ = ec;
        self->wake();
      }
    }, fo);
    return it;
  }

  // The loop's body: `const chunk = stream.destroyed ? null : stream.read()`.
  pulled pull() {
    if (closed_) return {pulled::end, {}, {}};
    std::optional<std::string> c;
    if (!r_.destroyed()) c = r_.read();
    if (c) return {pulled::chunk, std::move(*c), {}};
    if (state_ == state::errored) {
      close();
      return {pulled::error, {}, error_};
    }
    if (state_ == state::ended) {
      close();
      return {pulled::end, {}, {}};
    }
    return {pulled::pending, {}, {}};
  }

  // Node: `await new Promise(next)`: called once, at the next 'readable' or end.
  void wait(inline_function<void(), 32> waiter) { waiter_ = std::move(waiter); }

  // Node: the iterator's `finally`. With destroyOnReturn (the default), the
  // stream is destroyed, unless it ended or failed without autoDestroy:
  // through destroyer(), whose error is an AbortError when the stream is
  // not finished (Node's isFinished()).
  void close() noexcept {
    if (closed_) return;
    closed_ = true;
    waiter_ = nullptr;
    r_.event_loop().cancel(this);  // a wake-up on its way
    auto keep = shared_from_this();  // the listeners below may hold the last reference
    const bool destroy = state_ == state::running || r_.readable_state().has(detail::rflag::auto_destroy);
    if (destroy) {
      // Node leaves its listeners on a stream it destroys: 'readable' stays
      // (taking it off would reset readableFlowing), and so does eos's,
      // which takes the AbortError the destroy emits (no unhandled 'error').
      // Both find the iteration closed, and call nothing here.
      if (!r_.destroyed()) r_.destroy(is_finished() ? std::error_code{} : make_error_code(errc::aborted));
    } else {
      r_.off(event::readable, readable_listener_);
      if (cleanup_) {
        auto c = std::move(cleanup_);
        cleanup_ = nullptr;
        c();
      }
    }
  }

 private:
  enum class state { running, ended, errored };

  // Node: isFinished(stream): neither side can still be read or written.
  bool is_finished() const noexcept {
    if (r_.is_readable()) return false;
    const auto* w = dynamic_cast<const writable*>(&r_);
    return !(w && w->is_writable());
  }

  // The loop resumes where Node's `await` would: in a microtask.
  void wake() {
    if (!waiter_) return;
    auto w = std::make_shared<inline_function<void(), 32>>(std::move(waiter_));
    waiter_ = nullptr;
    r_.event_loop().queue_microtask([w] { (*w)(); }, this);
  }

 public:
  // Runs `f` where Node's loop body runs after its `for await` got a chunk:
  // in a microtask. Dropped if the iteration closes first.
  void after_await(inline_function<void(), 32> f) {
    auto w = std::make_shared<inline_function<void(), 32>>(std::move(f));
    r_.event_loop().queue_microtask([w] { (*w)(); }, this);
  }

 private:

  readable& r_;
  listener_id readable_listener_ = 0;
  std::function<void()> cleanup_;
  state state_ = state::running;  // Node: error undefined, null or the error
  std::error_code error_;
  inline_function<void(), 32> waiter_;
  bool closed_ = false;
};

// The error of a helper's function that threw.
std::error_code thrown() {
  try {
    throw;
  } catch (const std::system_error& e) {
    return e.code();
  } catch (const std::exception& e) {
    return user_error(e.what());
  }
}

// Node: `for await (const chunk of r) { if (!body(chunk)) break; }`, then
// done(error). `body` returns false to leave the loop (break), which
// destroys `r`; a throw from it leaves with its error.
using body_fn = inline_function<bool(std::string&& item), 32>;
/// One step of a `for await` over `it` for `self`: wait while nothing is
/// there (and then step again), else give what was pulled to `handle` after
/// the await's tick, as Node's loop body resumes.
template <class Self, class Handle>
void pump_iteration(const std::shared_ptr<Self>& self, iteration& it, Handle handle) {
  pulled p = it.pull();
  if (p.kind == pulled::pending) {
    it.wait([self] { self->pump(); });
    return;
  }
  it.after_await([self, handle, p = std::make_shared<pulled>(std::move(p))] { handle(*self, *p); });
}

class consumer : public std::enable_shared_from_this<consumer> {
 public:
  consumer(readable& r, body_fn body, done_cb done, bool linger)
      : it_(iteration::start(r)), body_(std::move(body)), done_(std::move(done)), linger_(linger) {}

  void pump() {
    pump_iteration(shared_from_this(), *it_, [](consumer& c, pulled& p) { c.handle(p); });
  }

 private:
  void handle(pulled& p) {
    if (lingering_) return it_->close();
    switch (p.kind) {
      case pulled::pending:
        return;
      case pulled::end:
        return finish({});
      case pulled::error:
        return finish(p.ec);
      case pulled::chunk: {
        bool go_on = false;
        std::error_code ec;
        try {
          go_on = body_(std::move(p.item));
        } catch (...) {
          ec = thrown();
        }
        if (ec || (!go_on && !linger_)) {
          it_->close();
          return finish(ec);
        }
        if (!go_on) {
          // Node: some, every and find stop a filter() (a map()) whose
          // pump has started its next read of the stream: the stream is
          // let go once that read has its chunk, or the end. That read
          // starts before the result is out (the result's promise is
          // several microtasks behind the pump).
          lingering_ = true;
          pump();
          return finish({});
        }
        return pump();
      }
    }
  }

  void finish(std::error_code ec) {
    auto done = std::move(done_);
    done_ = nullptr;
    if (done) done(ec);
  }

  std::shared_ptr<iteration> it_;
  body_fn body_;
  done_cb done_;
  bool linger_;
  bool lingering_ = false;
};

// `linger`: the helper is built on Node's map() (some, every, find).
void consume(readable& r, body_fn body, done_cb done, bool linger = false) {
  std::make_shared<consumer>(r, std::move(body), std::move(done), linger)->pump();
}

// The readable of map, filter, take and drop: Node's Readable.from over the
// helper's async generator (from.js's nextAsync): each _read pulls until
// push() says stop. `step` turns a chunk of `r` into what to push (nothing
// to skip it) and says whether to go on after it.
struct step_result {
  std::optional<std::string> out;
  bool go_on = true;
};
using step_fn = inline_function<step_result(std::string&& item), 32>;

class helper_source final : public source {
 public:
  helper_source(readable& r, step_fn step, std::stop_token before = {})
      : r_(r), step_(std::move(step)), before_(std::move(before)) {}
  ~helper_source() override {
    r_.event_loop().cancel(this);
    if (it_) it_->close();
  }

  // The helper's loop over `r` starts at the first _read, as Node's async
  // generator runs at its first next().
  void read(std::size_t) override {
    if (reading_) return;
    reading_ = true;
    if (returning_) {
      // Resumed from _read: the generator returns now (destroying `r`), and
      // nextAsync has the end after its await.
      returning_ = false;
      it_->close();
      r_.event_loop().queue_microtask([this] { push_eof(); }, this);
      return;
    }
    if (!it_) {
      // Node: take's and drop's generators throw an AbortError before
      // their loop when the signal is aborted: `r` is never iterated, and
      // from's nextAsync has the rejection after its await.
      if (before_.stop_requested()) {
        r_.event_loop().queue_microtask([this] { report_error(make_error_code(errc::aborted)); }, this);
        return;
      }
      it_ = iteration::start(r_);
    }
    pump();
  }

  // Node: from's _destroy: iterator.return(), which ends the helper's loop
  // over `r` (and so destroys it) if it has started.
  std::error_code destroy(std::error_code err) noexcept override {
    if (it_) it_->close();
    return err;
  }

 private:
  void pump() {
    pulled p = it_->pull();
    if (p.kind == pulled::pending) {
      it_->wait([this] { pump(); });
      return;
    }
    it_->after_await([this, p = std::make_shared<pulled>(std::move(p))] { handle(*p); });
  }

  // Node: the helper's generator got a chunk (or the end) from its loop;
  // from.js's nextAsync pushes what it yields and pulls again while push()
  // has room.
  void handle(pulled& p) {
    switch (p.kind) {
      case pulled::pending:
        return;
      case pulled::end:
        push_eof();
        return;
      case pulled::error:
        report_error(p.ec);
        return;
      case pulled::chunk: {
        step_result s;
        std::error_code ec;
        try {
          s = step_(std::move(p.item));
        } catch (...) {
          ec = thrown();
        }
        if (ec) {
          it_->close();
          report_error(ec);
          return;
        }
        bool room = true;
        if (s.out) room = stream().push(std::move(*s.out));
        if (!s.go_on) {
          // Node: take's generator returns (ending its loop over `r`, which
          // destroys it) when it is resumed after its last yield: at once
          // if push() had room, else at the next _read.
          if (!room) {
            returning_ = true;
            reading_ = false;
            return;
          }
          return finish();
        }
        if (!room) {
          reading_ = false;
          return;
        }
        return pump();
      }
    }
  }

  void finish() {
    it_->close();
    push_eof();
  }

  readable& r_;
  std::shared_ptr<iteration> it_;
  step_fn step_;
  std::stop_token before_;
  bool reading_ = false;
  bool returning_ = false;  // the generator waits at its last yield
};

std::unique_ptr<readable> helper_stream(readable& r, step_fn step, std::stop_token before = {}) {
  readable_options o;
  o.object_mode = true;
  o.high_water_mark = 1;
  o.event_loop = &r.event_loop();
  return std::make_unique<readable>(std::make_unique<helper_source>(r, std::move(step), std::move(before)), o);
}

// ---- Node's map() with its options: the machinery behind every helper
// that takes an operator_options.

// Node's promise of one call's result, as far as map() needs one: pending,
// then fulfilled (with items, or none for filter's and forEach's kEmpty)
// or rejected. Reactions run as microtasks in the order they were added, as
// a promise's jobs do.
struct item_promise {
  enum class state { pending, fulfilled, rejected } st = state::pending;
  std::vector<std::string> items;
  std::unique_ptr<readable> stream;  // flatMap's function gave a stream
  bool eof = false;  // Node: kEof, the end of the source
  std::error_code error;
  std::vector<inline_function<void(), 32>> reactions;

  void then(loop& l, inline_function<void(), 32> f) {
    if (st == state::pending) {
      reactions.push_back(std::move(f));
      return;
    }
    auto w = std::make_shared<inline_function<void(), 32>>(std::move(f));
    l.queue_microtask([w] { (*w)(); });
  }
  void settle(loop& l, std::error_code ec, std::vector<std::string> v) {
    if (st != state::pending) return;  // a completion called twice: the first counts
    st = ec ? state::rejected : state::fulfilled;
    error = ec;
    items = std::move(v);
    auto rs = std::move(reactions);
    reactions.clear();
    for (auto& f : rs) {
      auto w = std::make_shared<inline_function<void(), 32>>(std::move(f));
      l.queue_microtask([w] { (*w)(); });
    }
  }
};
using promise_ptr = std::shared_ptr<item_promise>;

// What the function given to the machinery does with one chunk: starts the
// call and settles `p` (then or later).
using start_fn = inline_function<void(std::string&& item, promise_ptr p), 32>;

// Node: map(fn, options)'s async generator, with from.js's nextAsync on its
// reading side. pump() reads the source (Node's `for await (val of stream)`)
// and starts calls while fewer than `concurrency` are in flight and fewer
// than `hwm` results wait; the generator's loop takes the results in order.
class mapper : public std::enable_shared_from_this<mapper> {
 public:
  // What the generator gives its reader (the result stream's source): an
  // item, the end, or an error.
  struct yielded {
    enum kind_t { item, end, error } kind;
    std::string value;
    std::error_code ec;
  };
  using reader_fn = inline_function<void(yielded), 32>;

  mapper(readable& r, start_fn start, operator_options o, bool flatten)
      : l_(r.event_loop()), r_(r), start_(std::move(start)), signal_(std::move(o.signal)), flatten_(flatten) {
    concurrency_ = o.concurrency;
    hwm_ = (o.high_water_mark ? *o.high_water_mark : concurrency_ - 1) + concurrency_;
  }

  // Node: iterator.next(), from nextAsync. The first starts the generator
  // (and its pump); the others resume it after its yield.
  void next(reader_fn reader) {
    reader_ = std::move(reader);
    if (finished_) return;
    if (!started_) {
      started_ = true;
      it_ = iteration::start(r_);
      pump_next();
      return run();
    }
    // Resumed after flatMap's yield: its `yield*` goes on over the sequence.
    if (flatten_) return flat_step();
    queue_.pop_front();
    maybe_resume();
    run();
  }

  // Node: from's _destroy, iterator.return(): the generator's `finally`
  // runs now if it waits at a yield (or never started); if it waits on an
  // await, once that settles and it would yield.
  void close() {
    if (finished_) return;
    if (!started_ || at_yield_) return finally_();
    return_pending_ = true;
  }

 private:
  static constexpr int after_pull = 1;

  // ---- pump(): Node's `for await (let val of stream) { ... }`.
  void pump_next() {
    pulled p = it_->pull();
    if (p.kind == pulled::pending) {
      // The iterator's `await new Promise(next)` resumes a microtask after
      // the wake-up, then yields the chunk it reads.
      it_->wait([self = shared_from_this()] {
        self->l_.queue_microtask([self] { self->pump_next(); });
      });
      return;
    }
    // A chunk costs the iterator's yield and the loop's await; the end one
    // await (the iterator returns).
    auto pp = std::make_shared<pulled>(std::move(p));
    it_->after_await([self = shared_from_this(), pp] {
      if (pp->kind == pulled::chunk)
        self->l_.queue_microtask([self, pp] { self->pump_body(*pp); });
      else
        self->pump_body(*pp);
    });
  }

  void pump_body(pulled& p) {
    if (p.kind == pulled::chunk) {
      if (done_) {
        it_->close();  // Node: `return` inside the loop ends the iteration
        return pump_finally();
      }
      if (signal_.stop_requested()) {
        it_->close();
        push_rejected(make_error_code(errc::aborted));
        return pump_finally();
      }
      auto pr = std::make_shared<item_promise>();
      try {
        start_(std::move(p.item), pr);
      } catch (...) {
        pr->settle(l_, thrown(), {});
      }
      ++cnt_;
      watch(pr);
      queue_.push_back(pr);
      wake_generator();
      if (!done_ && (queue_.size() >= hwm_ || cnt_ >= concurrency_)) {
        // Node: `await new Promise((resolve) => { resume = resolve; })`.
        resume_ = [self = shared_from_this()] { self->l_.queue_microtask([self] { self->pump_next(); }); };
        return;
      }
      return pump_next();
    }
    if (p.kind == pulled::end) {
      auto eof = std::make_shared<item_promise>();
      eof->eof = true;
      eof->st = item_promise::state::fulfilled;
      queue_.push_back(eof);
    } else if (p.kind == pulled::error) {
      push_rejected(p.ec);
    }
    pump_finally();
  }

  // Node: afterItemProcessed and onCatch, on the promise's settling, before
  // the generator's await on it.
  void watch(const promise_ptr& pr) {
    pr->then(l_, [self = shared_from_this(), pr] {
      if (pr->st == item_promise::state::rejected) self->done_ = true;
      --self->cnt_;
      self->maybe_resume();
    });
  }

  void push_rejected(std::error_code ec) {
    auto pr = std::make_shared<item_promise>();
    pr->settle(l_, ec, {});
    ++cnt_;
    watch(pr);
    queue_.push_back(pr);
  }

  // Node: pump's `finally`.
  void pump_finally() {
    done_ = true;
    wake_generator();
  }

  void wake_generator() {
    if (!next_) return;
    auto n = std::move(next_);
    next_ = nullptr;
    n();
  }

  // Node: maybeResume().
  void maybe_resume() {
    if (resume_ && !done_ && cnt_ < concurrency_ && queue_.size() < hwm_) {
      auto r = std::move(resume_);
      resume_ = nullptr;
      r();
    }
  }

  // ---- The generator's loop: `while (queue.length > 0) { const val =
  // await queue[0]; ... yield val; queue.shift(); maybeResume(); }`, then
  // `await new Promise((resolve) => { next = resolve; })`.
  void run() {
    at_yield_ = false;
    if (queue_.empty()) {
      next_ = [self = shared_from_this()] { self->l_.queue_microtask([self] { self->run(); }); };
      return;
    }
    auto front = queue_.front();
    front->then(l_, [self = shared_from_this(), front] { self->taken(*front); });
  }

  void taken(item_promise& p) {
    if (p.st == item_promise::state::rejected) return fail(p.error);
    if (p.eof) return end();
    if (signal_.stop_requested()) return fail(make_error_code(errc::aborted));
    if (flatten_) {
      // Node: flatMap's `for await (const val of map(...))` has the
      // sequence two microtasks after map's yield (its await, then the
      // loop's).
      if (p.stream) {
        // Node: `yield*` over the stream's own async iterator.
        inner_ = std::move(p.stream);
        inner_it_ = iteration::start(*inner_);
      } else {
        batch_.assign(std::make_move_iterator(p.items.begin()), std::make_move_iterator(p.items.end()));
      }
      p.items.clear();
      at_yield_ = true;
      return after(2, [](mapper& self) { self.flat_step(); });
    }
    if (!p.items.empty()) return yield(std::move(p.items.front()), 2);
    // Node: kEmpty (filter rejected the chunk; forEach's).
    queue_.pop_front();
    maybe_resume();
    run();
  }

  // Node: flatMap's `yield* val` over an array: each step of the
  // (async-from-sync) iterator costs two microtasks; after the last, its
  // loop asks map's generator for the next sequence.
  void flat_step() {
    if (inner_it_) return inner_step();
    if (batch_.empty()) {
      return after(2, [](mapper& self) {
        if (self.finished_) return;
        self.queue_.pop_front();
        self.maybe_resume();
        self.run();
      });
    }
    std::string v = std::move(batch_.front());
    batch_.pop_front();
    yield(std::move(v), 3);
  }

  // Node: flatMap's `yield*` over a stream's iterator: each chunk as the
  // stream has it (waiting for it at an await, not a yield), the stream's
  // error as the generator's, and after its end the next sequence.
  void inner_step() {
    at_yield_ = false;
    pulled q = inner_it_->pull();
    if (q.kind == pulled::pending) {
      inner_it_->wait([self = shared_from_this()] { self->l_.queue_microtask([self] { self->inner_step(); }); });
      return;
    }
    if (q.kind == pulled::chunk) return yield(std::move(q.item), inner_hops);
    inner_it_.reset();
    inner_.reset();
    if (q.kind == pulled::error) return fail(q.ec);
    return after(2, [](mapper& self) {
      if (self.finished_) return;
      self.queue_.pop_front();
      self.maybe_resume();
      self.run();
    });
  }
  static constexpr int inner_hops = 3;

  // Node: `yield val`, which awaits val: the reader has it two microtasks
  // later (the yield's await, then nextAsync's); flatMap's yield* one more
  // hop per step (`hops`).
  void yield(std::string v, int hops) {
    if (return_pending_) return finally_();
    at_yield_ = true;
    auto sv = std::make_shared<std::string>(std::move(v));
    after(hops, [sv](mapper& self) { self.deliver({yielded::item, std::move(*sv), {}}); });
  }

  // Runs `f` `hops` microtasks from now.
  void after(int hops, inline_function<void(mapper&), 32> f) {
    if (hops == 0) return f(*this);
    auto w = std::make_shared<inline_function<void(mapper&), 32>>(std::move(f));
    l_.queue_microtask([self = shared_from_this(), hops, w] { self->after(hops - 1, std::move(*w)); });
  }

  void end() {
    finally_();
    l_.queue_microtask([self = shared_from_this()] { self->deliver({yielded::end, {}, {}}); });
  }

  void fail(std::error_code ec) {
    finally_();
    l_.queue_microtask([self = shared_from_this(), ec] { self->deliver({yielded::error, {}, ec}); });
  }

  void deliver(yielded y) {
    if (!reader_) return;
    auto r = std::move(reader_);
    reader_ = nullptr;
    r(std::move(y));
  }

  // Node: the generator's `finally`: no more calls, and the pump (if it
  // waits) goes on to its next read, where it stops.
  void finally_() {
    if (finished_) return;
    finished_ = true;
    // Node: the generator's return goes through `yield*` to the stream's
    // iterator, whose `finally` destroys it.
    if (inner_it_) inner_it_->close();
    at_yield_ = false;
    done_ = true;
    if (!started_) return;
    if (resume_) {
      auto r = std::move(resume_);
      resume_ = nullptr;
      r();
    }
  }

  loop& l_;
  readable& r_;
  start_fn start_;
  std::stop_token signal_;
  bool flatten_;
  std::size_t concurrency_ = 1;
  std::size_t hwm_ = 1;
  std::shared_ptr<iteration> it_;
  std::deque<promise_ptr> queue_;
  std::deque<std::string> batch_;
  std::unique_ptr<readable> inner_;  // the stream `yield*` reads; before inner_it_ (destroyed after it)
  std::shared_ptr<iteration> inner_it_;
  std::size_t cnt_ = 0;  // calls in flight
  bool done_ = false;
  bool started_ = false;
  bool finished_ = false;
  bool at_yield_ = false;
  bool return_pending_ = false;
  inline_function<void(), 32> next_;    // the generator waits for the pump
  inline_function<void(), 32> resume_;  // the pump waits for room
  reader_fn reader_;
};

// The result stream: Node's Readable.from over the generator (nextAsync).
class mapper_source final : public source {
 public:
  explicit mapper_source(std::shared_ptr<mapper> m) : m_(std::move(m)) {}
  ~mapper_source() override {
    *alive_ = false;
    m_->close();
  }

  void read(std::size_t) override {
    if (reading_) return;
    reading_ = true;
    next();
  }

  std::error_code destroy(std::error_code err) noexcept override {
    destroyed_ = true;
    m_->close();
    return err;
  }

 private:
  void next() {
    m_->next([this, alive = alive_](mapper::yielded y) {
      if (!*alive || destroyed_) return;
      switch (y.kind) {
        case mapper::yielded::item:
          if (stream().push(y.value)) return next();
          reading_ = false;
          return;
        case mapper::yielded::end:
          push_eof();
          return;
        case mapper::yielded::error:
          // Node: nextAsync's catch destroys the stream, whose _destroy
          // (from's close()) settles the generator's throw() before its
          // callback: the error is out two microtasks later.
          stream().event_loop().queue_microtask([this, alive, ec = y.ec] {
            if (!*alive) return;
            stream().event_loop().queue_microtask([this, alive, ec] {
              if (*alive && !destroyed_) report_error(ec);
            });
          });
          return;
      }
    });
  }

  std::shared_ptr<mapper> m_;
  std::shared_ptr<bool> alive_ = std::make_shared<bool>(true);
  bool reading_ = false;
  bool destroyed_ = false;
};

void check(const operator_options& o) {
  // Node: validateInteger(concurrency, 'options.concurrency', 1), thrown.
  if (o.concurrency < 1)
    throw stream_error(make_error_code(errc::out_of_range), "operator_options.concurrency must be at least 1");
}

std::unique_ptr<readable> mapper_stream(readable& r, start_fn start, operator_options o, bool flatten = false) {
  check(o);
  auto m = std::make_shared<mapper>(r, std::move(start), std::move(o), flatten);
  readable_options ro;
  ro.object_mode = true;
  ro.high_water_mark = 1;
  ro.event_loop = &r.event_loop();
  return std::make_unique<readable>(std::make_unique<mapper_source>(std::move(m)), ro);
}

start_fn async_map_start(loop& l, async_map_fn fn) {
  return [&l, fn = std::move(fn)](std::string&& item, promise_ptr p) mutable {
    fn(item, map_done([&l, p](std::error_code ec, std::string v) {
      std::vector<std::string> items;
      if (!ec) items.push_back(std::move(v));
      p->settle(l, ec, std::move(items));
    }));
  };
}

// Node: `for await (const v of generator) { if (!body(v)) break; }` over
// map()'s generator itself, as forEach, some, every and find read it (no
// stream between them): the body runs as the generator yields; a break
// returns the generator.
class generator_reader : public std::enable_shared_from_this<generator_reader> {
 public:
  generator_reader(std::shared_ptr<mapper> m, body_fn body, done_cb done)
      : m_(std::move(m)), body_(std::move(body)), done_(std::move(done)) {}

  void next() {
    m_->next([self = shared_from_this()](mapper::yielded y) {
      switch (y.kind) {
        case mapper::yielded::item: {
          bool go_on = false;
          std::error_code ec;
          try {
            go_on = self->body_(std::move(y.value));
          } catch (...) {
            ec = thrown();
          }
          if (!ec && go_on) return self->next();
          self->m_->close();
          return self->finish(ec);
        }
        case mapper::yielded::end:
          return self->finish({});
        case mapper::yielded::error:
          return self->finish(y.ec);
      }
    });
  }

 private:
  void finish(std::error_code ec) {
    auto d = std::move(done_);
    done_ = nullptr;
    if (d) d(ec);
  }

  std::shared_ptr<mapper> m_;
  body_fn body_;
  done_cb done_;
};

void read_generator(readable& r, start_fn start, operator_options o, body_fn body, done_cb done) {
  check(o);
  auto m = std::make_shared<mapper>(r, std::move(start), std::move(o), false);
  std::make_shared<generator_reader>(std::move(m), std::move(body), std::move(done))->next();
}

// Node: filterFn, an async function that awaits fn's promise: its own
// promise settles a microtask after fn's. forEachFn (keep = false) too.
start_fn async_filter_start(loop& l, async_predicate_fn fn, bool keep_matches = true) {
  return [&l, fn = std::move(fn), keep_matches](std::string&& item, promise_ptr p) mutable {
    auto kept = std::make_shared<std::string>(item);
    fn(*kept, predicate_done([&l, p, kept, keep_matches](std::error_code ec, bool ok) {
      l.queue_microtask([&l, p, kept, keep_matches, ec, ok] {
        std::vector<std::string> items;
        if (!ec && ok && keep_matches) items.push_back(std::move(*kept));
        p->settle(l, ec, std::move(items));
      });
    }));
  };
}

async_predicate_fn sync_predicate(predicate_fn fn) {
  return [fn = std::move(fn)](std::string_view item, predicate_done done) mutable {
    bool ok = fn(item);  // a throw becomes the call's error (mapper::pump_body)
    done({}, ok);
  };
}

// Node: reduce(reducer, initial, { signal }): `for await (const value of
// this)`, the signal looked at for each chunk, then `initialValue = await
// reducer(initialValue, value, { signal })`: the next read waits for the
// call.
class reduction : public std::enable_shared_from_this<reduction> {
 public:
  reduction(readable& r, async_reduce_fn fn, std::optional<std::string> acc, reduce_cb cb, std::stop_token signal)
      : it_(iteration::start(r)), l_(r.event_loop()), fn_(std::move(fn)), acc_(std::move(acc)), cb_(std::move(cb)),
        signal_(std::move(signal)) {}

  void pump() {
    pump_iteration(shared_from_this(), *it_, [](reduction& r, pulled& p) { r.handle(p); });
  }

 private:
  void handle(pulled& p) {
    switch (p.kind) {
      case pulled::pending:
        return;
      case pulled::end:
        if (!acc_) return finish(make_error_code(errc::reduce_empty));
        return finish({});
      case pulled::error:
        return finish(p.ec);
      case pulled::chunk:
        break;
    }
    if (signal_.stop_requested()) return fail(make_error_code(errc::aborted));
    if (!acc_) {
      acc_ = std::move(p.item);
      return pump();
    }
    // The call's completion: a second one is ignored, as a promise settles
    // once. The loop resumes where Node's `await` on the promise would: a
    // microtask after it settles.
    auto called = std::make_shared<bool>(false);
    std::string acc = std::move(*acc_);
    acc_.reset();
    try {
      fn_(std::move(acc), p.item, reduce_done([self = shared_from_this(), called](std::error_code ec, std::string v) {
            if (*called) return;
            *called = true;
            auto sv = std::make_shared<std::string>(std::move(v));
            self->l_.queue_microtask([self, ec, sv] {
              if (ec) return self->fail(ec);
              self->acc_ = std::move(*sv);
              self->pump();
            });
          }));
    } catch (...) {
      *called = true;
      fail(thrown());
    }
  }

  // Leaving the loop with an error (Node: the throw, whose for-await
  // returns the iterator and so destroys `r`).
  void fail(std::error_code ec) {
    it_->close();
    finish(ec);
  }

  void finish(std::error_code ec) {
    auto cb = std::move(cb_);
    cb_ = nullptr;
    if (!cb) return;
    if (ec) return cb(ec, std::string());
    cb({}, std::move(*acc_));
  }

  std::shared_ptr<iteration> it_;
  loop& l_;
  async_reduce_fn fn_;
  std::optional<std::string> acc_;
  reduce_cb cb_;
  std::stop_token signal_;
};

// Node: some(fn, options): `for await (const unused of filter(fn, options))
// return true;`, over the filter's generator.
void first_match(readable& r, async_predicate_fn fn, operator_options o,
                 inline_function<void(std::error_code, std::optional<std::string>), 32> cb) {
  auto found = std::make_shared<std::optional<std::string>>();
  read_generator(
      r, async_filter_start(r.event_loop(), std::move(fn)), std::move(o),
      [found](std::string&& item) {
        *found = std::move(item);
        return false;
      },
      [found, cb = std::move(cb)](std::error_code ec) mutable { cb(ec, ec ? std::nullopt : std::move(*found)); });
}

}  // namespace

void to_array(readable& r, to_array_cb cb) {
  auto all = std::make_shared<std::vector<std::string>>();
  consume(
      r,
      [all](std::string&& item) {
        all->push_back(std::move(item));
        return true;
      },
      [all, cb = std::move(cb)](std::error_code ec) mutable {
        cb(ec, ec ? std::vector<std::string>{} : std::move(*all));
      });
}

void for_each(readable& r, item_fn fn, done_cb cb) {
  consume(
      r,
      [fn = std::move(fn)](std::string&& item) {
        fn(item);
        return true;
      },
      std::move(cb));
}

void reduce(readable& r, reduce_fn fn, std::optional<std::string> initial, reduce_cb cb) {
  auto acc = std::make_shared<std::optional<std::string>>(std::move(initial));
  consume(
      r,
      [acc, fn = std::move(fn)](std::string&& item) {
        if (!*acc)
          *acc = std::move(item);
        else
          *acc = fn(std::move(**acc), item);
        return true;
      },
      [acc, cb = std::move(cb)](std::error_code ec) mutable {
        if (!ec && !*acc) ec = make_error_code(errc::reduce_empty);
        cb(ec, ec ? std::string() : std::move(**acc));
      });
}

void some(readable& r, predicate_fn fn, bool_cb cb) {
  auto found = std::make_shared<bool>(false);
  consume(
      r,
      [found, fn = std::move(fn)](std::string&& item) {
        *found = fn(item);
        return !*found;
      },
      [found, cb = std::move(cb)](std::error_code ec) mutable { cb(ec, !ec && *found); },
      true);
}

void every(readable& r, predicate_fn fn, bool_cb cb) {
  auto failed = std::make_shared<bool>(false);
  consume(
      r,
      [failed, fn = std::move(fn)](std::string&& item) {
        *failed = !fn(item);
        return !*failed;
      },
      [failed, cb = std::move(cb)](std::error_code ec) mutable { cb(ec, !ec && !*failed); },
      true);
}

void find(readable& r, predicate_fn fn, find_cb cb) {
  auto found = std::make_shared<std::optional<std::string>>();
  consume(
      r,
      [found, fn = std::move(fn)](std::string&& item) {
        if (!fn(item)) return true;
        *found = std::move(item);
        return false;
      },
      [found, cb = std::move(cb)](std::error_code ec) mutable {
        cb(ec, ec ? std::nullopt : std::move(*found));
      },
      true);
}

std::unique_ptr<readable> map(readable& r, map_fn fn) {
  return helper_stream(r, [fn = std::move(fn)](std::string&& item) { return step_result{fn(item), true}; });
}

std::unique_ptr<readable> filter(readable& r, predicate_fn fn) {
  return helper_stream(r, [fn = std::move(fn)](std::string&& item) {
    step_result s;
    if (fn(item)) s.out = std::move(item);
    return s;
  });
}

// Node: take's generator yields while `number-- > 0` and returns once
// `number <= 0`, after the chunk that got it there (take(0) still reads one).
std::unique_ptr<readable> take(readable& r, std::size_t n) {
  return helper_stream(r, [n](std::string&& item) mutable {
    step_result s;
    if (n > 0) {
      s.out = std::move(item);
      --n;
    }
    s.go_on = n > 0;
    return s;
  });
}

std::unique_ptr<readable> drop(readable& r, std::size_t n) {
  return helper_stream(r, [n](std::string&& item) mutable {
    step_result s;
    if (n > 0)
      --n;
    else
      s.out = std::move(item);
    return s;
  });
}

// ---- The overloads with options (Node's map() machinery).

std::unique_ptr<readable> map(readable& r, async_map_fn fn, operator_options o) {
  return mapper_stream(r, async_map_start(r.event_loop(), std::move(fn)), std::move(o));
}

std::unique_ptr<readable> map(readable& r, map_fn fn, operator_options o) {
  return map(
      r,
      [fn = std::move(fn)](std::string_view item, map_done done) mutable {
        std::string v = fn(item);
        done({}, std::move(v));
      },
      std::move(o));
}

std::unique_ptr<readable> filter(readable& r, async_predicate_fn fn, operator_options o) {
  return mapper_stream(r, async_filter_start(r.event_loop(), std::move(fn)), std::move(o));
}

std::unique_ptr<readable> filter(readable& r, predicate_fn fn, operator_options o) {
  return filter(r, sync_predicate(std::move(fn)), std::move(o));
}

// Node: flatMap's generator, `for await (const val of map(fn, options))
// yield* val`: the sequences follow one another.
std::unique_ptr<readable> flat_map(readable& r, async_flat_map_fn fn, operator_options o) {
  auto& l = r.event_loop();
  return mapper_stream(
      r,
      [&l, fn = std::move(fn)](std::string&& item, promise_ptr p) mutable {
        fn(item, flat_map_done([&l, p](std::error_code ec, std::vector<std::string> v) {
          p->settle(l, ec, ec ? std::vector<std::string>{} : std::move(v));
        }));
      },
      std::move(o), true);
}

// Node: flatMap(fn) whose fn returns a stream: `yield*` reads it through
// before the next one (made ahead, up to `concurrency` of them, as map's
// results are).
std::unique_ptr<readable> flat_map(readable& r, flat_map_stream_fn fn, operator_options o) {
  auto& l = r.event_loop();
  return mapper_stream(
      r,
      [&l, fn = std::move(fn)](std::string&& item, promise_ptr p) mutable {
        std::unique_ptr<readable> s = fn(item);
        if (!s) return p->settle(l, user_error("flat_map: the function gave no stream"), {});
        p->stream = std::move(s);
        p->settle(l, {}, {});
      },
      std::move(o), true);
}

std::unique_ptr<readable> flat_map(readable& r, flat_map_fn fn, operator_options o) {
  return flat_map(
      r,
      [fn = std::move(fn)](std::string_view item, flat_map_done done) mutable {
        std::vector<std::string> v = fn(item);
        done({}, std::move(v));
      },
      std::move(o));
}

// Node: forEach(fn, options): `for await (const unused of map(forEachFn,
// options));` where forEachFn awaits fn and gives kEmpty.
void for_each(readable& r, async_item_fn fn, done_cb cb, operator_options o) {
  auto each = [fn = std::move(fn)](std::string_view item, predicate_done done) mutable {
    fn(item, item_done([done = std::move(done)](std::error_code ec) mutable { done(ec, false); }));
  };
  read_generator(
      r, async_filter_start(r.event_loop(), std::move(each), false), std::move(o),
      [](std::string&&) { return true; }, std::move(cb));
}

void for_each(readable& r, item_fn fn, done_cb cb, operator_options o) {
  for_each(
      r,
      [fn = std::move(fn)](std::string_view item, item_done done) mutable {
        fn(item);
        done({});
      },
      std::move(cb), std::move(o));
}

void some(readable& r, async_predicate_fn fn, bool_cb cb, operator_options o) {
  first_match(r, std::move(fn), std::move(o),
              [cb = std::move(cb)](std::error_code ec, std::optional<std::string> v) mutable { cb(ec, !ec && v); });
}

void some(readable& r, predicate_fn fn, bool_cb cb, operator_options o) {
  some(r, sync_predicate(std::move(fn)), std::move(cb), std::move(o));
}

// Node: every(fn) is !some(!fn).
void every(readable& r, async_predicate_fn fn, bool_cb cb, operator_options o) {
  auto negated = [fn = std::move(fn)](std::string_view item, predicate_done done) mutable {
    fn(item, predicate_done([done = std::move(done)](std::error_code ec, bool ok) mutable { done(ec, !ok); }));
  };
  first_match(r, std::move(negated), std::move(o),
              [cb = std::move(cb)](std::error_code ec, std::optional<std::string> v) mutable { cb(ec, !ec && !v); });
}

void every(readable& r, predicate_fn fn, bool_cb cb, operator_options o) {
  every(r, sync_predicate(std::move(fn)), std::move(cb), std::move(o));
}

void find(readable& r, async_predicate_fn fn, find_cb cb, operator_options o) {
  first_match(r, std::move(fn), std::move(o), std::move(cb));
}

void find(readable& r, predicate_fn fn, find_cb cb, operator_options o) {
  find(r, sync_predicate(std::move(fn)), std::move(cb), std::move(o));
}

// Node: toArray({ signal }) looks at the signal at each chunk.
void to_array(readable& r, to_array_cb cb, operator_options o) {
  auto all = std::make_shared<std::vector<std::string>>();
  consume(
      r,
      [all, signal = std::move(o.signal)](std::string&& item) {
        if (signal.stop_requested()) throw stream_error(make_error_code(errc::aborted));
        all->push_back(std::move(item));
        return true;
      },
      [all, cb = std::move(cb)](std::error_code ec) mutable {
        cb(ec, ec ? std::vector<std::string>{} : std::move(*all));
      });
}

// Node: take's and drop's generators look at the signal before their loop
// and at each chunk.
namespace {
std::unique_ptr<readable> signalled(readable& r, std::size_t n, std::stop_token signal, bool taking) {
  std::stop_token before = signal;
  return helper_stream(r, [n, signal = std::move(signal), taking](std::string&& item) mutable {
    if (signal.stop_requested()) throw stream_error(make_error_code(errc::aborted));
    step_result s;
    if (n > 0) {
      if (taking) s.out = std::move(item);
      --n;
    } else if (!taking) {
      s.out = std::move(item);
    }
    if (taking) s.go_on = n > 0;
    return s;
  }, std::move(before));
}
}  // namespace

std::unique_ptr<readable> take(readable& r, std::size_t n, operator_options o) {
  return signalled(r, n, std::move(o.signal), true);
}

std::unique_ptr<readable> drop(readable& r, std::size_t n, operator_options o) {
  return signalled(r, n, std::move(o.signal), false);
}

// Node: reduce(fn, initial, { signal }). An already aborted signal
// destroys the stream with the AbortError and fails once it has finished
// (`await finished(this.destroy(err)); throw err`), without reading it.
void reduce(readable& r, async_reduce_fn fn, std::optional<std::string> initial, reduce_cb cb, operator_options o) {
  if (o.signal.stop_requested()) {
    const std::error_code err = make_error_code(errc::aborted);
    r.destroy(err);
    auto& l = r.event_loop();
    auto shared = std::make_shared<reduce_cb>(std::move(cb));
    finished(stream_ref(r), [&l, shared, err](std::error_code) {
      // finished()'s promise rejects, and reduce's await throws: a microtask.
      l.queue_microtask([shared, err] { (*shared)(err, std::string()); });
    });
    return;
  }
  std::make_shared<reduction>(r, std::move(fn), std::move(initial), std::move(cb), std::move(o.signal))->pump();
}

void reduce(readable& r, reduce_fn fn, std::optional<std::string> initial, reduce_cb cb, operator_options o) {
  reduce(
      r,
      [fn = std::move(fn)](std::string acc, std::string_view item, reduce_done done) mutable {
        std::string v = fn(std::move(acc), item);
        done({}, std::move(v));
      },
      std::move(initial), std::move(cb), std::move(o));
}

}  // namespace sluice
