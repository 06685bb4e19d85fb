// Node v20's map() with its options (lib/internal/streams/operators.js):
// up to `concurrency` calls in flight, the results in input order, and the
// helpers Node builds on it (filter, flatMap, forEach, some, every, find),
// with their options.
#include <deque>
#include <utility>

#include "sluice/base/errors.h"
#include "sluice/stream/async_iterator.h"
#include "sluice/stream/detail/operators.h"
#include "sluice/stream/operators.h"

namespace sluice {

namespace {

using detail::body_fn;
using detail::thrown;
using pulled = async_iterator::step;

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
      it_ = async_iterator::create(r_);
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
    pulled p = it_->next();
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
        start_(std::move(p.value), pr);
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
        inner_it_ = async_iterator::create(*inner_);
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
    pulled q = inner_it_->next();
    if (q.kind == pulled::pending) {
      inner_it_->wait([self = shared_from_this()] { self->l_.queue_microtask([self] { self->inner_step(); }); });
      return;
    }
    if (q.kind == pulled::chunk) return yield(std::move(q.value), inner_hops);
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
  std::shared_ptr<async_iterator> it_;
  std::deque<promise_ptr> queue_;
  std::deque<std::string> batch_;
  std::unique_ptr<readable> inner_;  // the stream `yield*` reads; before inner_it_ (destroyed after it)
  std::shared_ptr<async_iterator> inner_it_;
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

// ---- The helpers Node builds on map(). Without options they are the same
// call with the defaults, as in Node (one function, `options = undefined`).

void for_each(readable& r, item_fn fn, done_cb cb) {
  for_each(r, std::move(fn), std::move(cb), operator_options{});
}

void some(readable& r, predicate_fn fn, bool_cb cb) {
  some(r, std::move(fn), std::move(cb), operator_options{});
}

void every(readable& r, predicate_fn fn, bool_cb cb) {
  every(r, std::move(fn), std::move(cb), operator_options{});
}

void find(readable& r, predicate_fn fn, find_cb cb) {
  find(r, std::move(fn), std::move(cb), operator_options{});
}

std::unique_ptr<readable> map(readable& r, map_fn fn) {
  return map(r, std::move(fn), operator_options{});
}

std::unique_ptr<readable> filter(readable& r, predicate_fn fn) {
  return filter(r, std::move(fn), operator_options{});
}


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
  auto& l = r.event_loop();
  // Node: `async (...args) => !(await fn(...args))`: the negation's promise
  // settles a microtask after fn's.
  auto negated = [&l, fn = std::move(fn)](std::string_view item, predicate_done done) mutable {
    fn(item, predicate_done([&l, done = std::move(done)](std::error_code ec, bool ok) mutable {
      auto d = std::make_shared<predicate_done>(std::move(done));
      l.queue_microtask([d, ec, ok] { (*d)(ec, !ok); });
    }));
  };
  // Node: `!(await some(...))`: every's promise settles a microtask after some's.
  first_match(r, std::move(negated), std::move(o),
              [&l, cb = std::move(cb)](std::error_code ec, std::optional<std::string> v) mutable {
                auto c = std::make_shared<bool_cb>(std::move(cb));
                const bool all = !ec && !v;
                l.queue_microtask([c, ec, all] { (*c)(ec, all); });
              });
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

}  // namespace sluice
