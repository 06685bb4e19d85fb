// The iterator helpers of Node v20 (lib/internal/streams/operators.js) that
// read one iteration of a readable (async_iterator, Node's
// createAsyncIterator()) themselves: toArray, reduce, and the generators of
// take and drop. Those Node builds on map() (filter, flatMap, forEach, some,
// every, find) are in operators_map.cc, with map().
#include "sluice/stream/operators.h"

#include <utility>

#include "sluice/base/errors.h"
#include "sluice/stream/async_iterator.h"
#include "sluice/stream/detail/operators.h"
#include "sluice/stream/finished.h"
#include "sluice/stream/stream_ref.h"

namespace sluice {

namespace detail {

std::error_code thrown() {
  try {
    throw;
  } catch (const std::system_error& e) {
    return e.code();
  } catch (const std::exception& e) {
    return user_error(e.what());
  }
}

}  // namespace detail

namespace {

using detail::body_fn;
using detail::thrown;
using pulled = async_iterator::step;

/// One step of a `for await` over `it` for `self`: wait while nothing is
/// there (and then step again), else give what was pulled to `handle` after
/// the await's tick, as Node's loop body resumes.
template <class Self, class Handle>
void pump_iteration(const std::shared_ptr<Self>& self, async_iterator& it, Handle handle) {
  pulled p = it.next();
  if (p.kind == pulled::pending) {
    it.wait([self] { self->pump(); });
    return;
  }
  it.after_await([self, handle, p = std::make_shared<pulled>(std::move(p))] { handle(*self, *p); });
}

class consumer : public std::enable_shared_from_this<consumer> {
 public:
  consumer(readable& r, body_fn body, done_cb done)
      : it_(async_iterator::create(r)), body_(std::move(body)), done_(std::move(done)) {}

  void pump() {
    pump_iteration(shared_from_this(), *it_, [](consumer& c, pulled& p) { c.handle(p); });
  }

 private:
  void handle(pulled& p) {
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
          go_on = body_(std::move(p.value));
        } catch (...) {
          ec = thrown();
        }
        if (ec || !go_on) {
          it_->close();
          return finish(ec);
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

  std::shared_ptr<async_iterator> it_;
  body_fn body_;
  done_cb done_;
};

// Node: toArray and reduce, `for await (const value of this)`.
void consume(readable& r, body_fn body, done_cb done) {
  std::make_shared<consumer>(r, std::move(body), std::move(done))->pump();
}

// The readable of take and drop: Node's Readable.from over the
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
      it_ = async_iterator::create(r_);
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
    pulled p = it_->next();
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
          s = step_(std::move(p.value));
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
  std::shared_ptr<async_iterator> it_;
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

// Node: reduce(reducer, initial, { signal }): `for await (const value of
// this)`, the signal looked at for each chunk, then `initialValue = await
// reducer(initialValue, value, { signal })`: the next read waits for the
// call.
class reduction : public std::enable_shared_from_this<reduction> {
 public:
  reduction(readable& r, async_reduce_fn fn, std::optional<std::string> acc, reduce_cb cb, std::stop_token signal)
      : it_(async_iterator::create(r)), l_(r.event_loop()), fn_(std::move(fn)), acc_(std::move(acc)), cb_(std::move(cb)),
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
      acc_ = std::move(p.value);
      return pump();
    }
    // The call's completion: a second one is ignored, as a promise settles
    // once. The loop resumes where Node's `await` on the promise would: a
    // microtask after it settles.
    auto called = std::make_shared<bool>(false);
    std::string acc = std::move(*acc_);
    acc_.reset();
    try {
      fn_(std::move(acc), p.value, reduce_done([self = shared_from_this(), called](std::error_code ec, std::string v) {
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

  std::shared_ptr<async_iterator> it_;
  loop& l_;
  async_reduce_fn fn_;
  std::optional<std::string> acc_;
  reduce_cb cb_;
  std::stop_token signal_;
};

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
