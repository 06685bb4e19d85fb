// The iterator helpers (lib/internal/streams/operators.js) over one
// iteration of a readable, Node's createAsyncIterator()
// (lib/internal/streams/readable.js): 'readable' and finished() wake it,
// read() takes each chunk, and its end destroys the stream as the
// iterator's `finally` does.
#include "sluice/stream/operators.h"

#include <utility>

#include "sluice/errors.h"
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
      // Node leaves its listeners on a stream it destroys; 'readable' stays
      // (taking it off would reset readableFlowing), and calls nothing here.
      if (!r_.destroyed()) r_.destroy(is_finished() ? std::error_code{} : make_error_code(errc::aborted));
    } else {
      r_.off(event::readable, readable_listener_);
    }
    if (cleanup_) {
      auto c = std::move(cleanup_);
      cleanup_ = nullptr;
      c();
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
class consumer : public std::enable_shared_from_this<consumer> {
 public:
  consumer(readable& r, body_fn body, done_cb done, bool linger)
      : it_(iteration::start(r)), body_(std::move(body)), done_(std::move(done)), linger_(linger) {}

  void pump() {
    pulled p = it_->pull();
    if (p.kind == pulled::pending) {
      it_->wait([self = shared_from_this()] { self->pump(); });
      return;
    }
    it_->after_await([self = shared_from_this(), p = std::make_shared<pulled>(std::move(p))] { self->handle(*p); });
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
          // let go once that read has its chunk, or the end.
          finish({});
          lingering_ = true;
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
  helper_source(readable& r, step_fn step) : r_(r), step_(std::move(step)) {}
  ~helper_source() override {
    if (it_) it_->close();
  }

  // The helper's loop over `r` starts at the first _read, as Node's async
  // generator runs at its first next().
  void read(std::size_t) override {
    if (reading_) return;
    reading_ = true;
    if (!it_) it_ = iteration::start(r_);
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
          it_->close();
          push_eof();
          return;
        }
        if (!room) {
          reading_ = false;
          return;
        }
        return pump();
      }
    }
  }

  readable& r_;
  std::shared_ptr<iteration> it_;
  step_fn step_;
  bool reading_ = false;
};

std::unique_ptr<readable> helper_stream(readable& r, step_fn step) {
  readable_options o;
  o.object_mode = true;
  o.high_water_mark = 1;
  o.event_loop = &r.event_loop();
  return std::make_unique<readable>(std::make_unique<helper_source>(r, std::move(step)), o);
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

}  // namespace sluice
