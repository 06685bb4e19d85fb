// Readable.from(): the source that pulls a from_next, in the order of Node
// v20's nextSyncWithSyncValues() (lib/internal/streams/from.js), and the one
// that pulls a from_async_next, in the order of its nextAsync().
#include "sluice/stream/from.h"

#include <exception>
#include <optional>

#include "sluice/base/errors.h"
#include "sluice/stream/default_high_water_mark.h"

namespace sluice {

namespace {

class from_source final : public source {
 public:
  explicit from_source(from_next next) : next_(std::move(next)) {}

  // Node: readable._read, then nextSyncWithSyncValues(): pull while push()
  // says there is room. `reading_` protects against a _read that comes in
  // (through a listener of a pushed item) before this pull is done.
  void read(std::size_t) override {
    if (reading_) return;
    reading_ = true;
    for (;;) {
      std::string item;
      std::error_code ec;
      bool got = false;
      try {
        got = next_(item, ec);
      } catch (const std::system_error& e) {
        ec = e.code();
      } catch (const std::exception& e) {
        ec = user_error(e.what());
      }
      if (ec) {
        // Node: readable.destroy(err) in the catch; `reading` stays set.
        report_error(ec);
        return;
      }
      if (!got) {
        push_eof();
        return;
      }
      if (stream().push(std::move(item))) continue;
      reading_ = false;
      return;
    }
  }

 private:
  from_next next_;
  bool reading_ = false;
};

}  // namespace

namespace detail {

class from_async_source;

// What every from_completion of one stream shares: the source while it
// waits for answers, null once it was destroyed or deleted, so that an
// answer that comes later is dropped without touching it.
struct from_async_link {
  from_async_source* source = nullptr;
};

// Node: Readable.from(asyncIterable): _read starts nextAsync(), which awaits
// iterator.next() and pushes its value while push() says there is room.
// `pull_` numbers the pulls: an answer counts only for the pull in flight,
// so that a second answer to the same pull, or one to an older pull, is
// dropped.
class from_async_source final : public source {
 public:
  enum class kind { item, end, error };

  from_async_source(from_async_next next, from_cancel cancel)
      : next_(std::move(next)), cancel_(std::move(cancel)), link_(std::make_shared<from_async_link>()) {
    link_->source = this;
  }
  // A stream deleted without destroy() still tells its source to stop.
  ~from_async_source() override { stop({}); }

  // Node: readable._read: `reading` protects against a _read before the
  // last pull's answer was pushed.
  void read(std::size_t) override {
    if (reading_ || stopped_) return;
    reading_ = true;
    next_async();
  }

  // Node: readable._destroy, then close(error): iterator.throw(error) or
  // iterator.return(), here one hook, called at once (see from_cancel).
  std::error_code destroy(std::error_code err) noexcept override {
    stop(err);
    return err;
  }

  bool waiting_for(std::uint64_t pull) const noexcept { return in_flight_ && pull == pull_; }

  // A from_completion's answer to pull number `pull`.
  void answer(std::uint64_t pull, kind k, std::string item, std::error_code ec) {
    if (!waiting_for(pull)) return;
    in_flight_ = false;
    if (in_next_) {
      // Answered inside next_(): next_async()'s loop takes it once next_
      // returns, rather than recursing into another pull from here.
      sync_ = answered{k, std::move(item), ec};
      return;
    }
    if (take(k, std::move(item), ec)) next_async();
  }

 private:
  struct answered {
    kind k;
    std::string item;
    std::error_code ec;
  };

  // Node: nextAsync(): one pull at a time; the next as soon as push() of the
  // last one said there is room.
  void next_async() {
    for (;;) {
      if (stopped_) return;
      ++pull_;
      in_flight_ = true;
      in_next_ = true;
      sync_.reset();
      std::error_code thrown;
      try {
        next_(from_completion(link_, pull_));
      } catch (const std::system_error& e) {
        thrown = e.code();
      } catch (const std::exception& e) {
        thrown = user_error(e.what());
      }
      in_next_ = false;
      if (thrown) {
        // Node: iterator.next() threw; the await rejects: destroy(err). An
        // answer the pull gave before it threw does not count.
        in_flight_ = false;
        take(kind::error, {}, thrown);
        return;
      }
      if (in_flight_) return;  // answered later, through answer()
      answered a = std::move(*sync_);
      sync_.reset();
      if (!take(a.k, std::move(a.item), a.ec)) return;
    }
  }

  // Node: the body of nextAsync()'s loop after the await. Returns whether
  // to pull again.
  bool take(kind k, std::string&& item, std::error_code ec) {
    switch (k) {
      case kind::error:
        // Node: readable.destroy(err); `reading` stays set. An empty error
        // is Node's rejection with undefined: destroy() without an error.
        report_error(ec);
        return false;
      case kind::end:
        push_eof();  // Node: readable.push(null); `reading` stays set
        return false;
      case kind::item:
        if (stream().push(std::move(item))) return true;
        reading_ = false;
        return false;
    }
    return false;
  }

  void stop(std::error_code err) noexcept {
    if (stopped_) return;
    stopped_ = true;
    in_flight_ = false;
    link_->source = nullptr;
    if (cancel_) {
      from_cancel c = std::move(cancel_);
      cancel_ = nullptr;
      c(err);
    }
  }

  from_async_next next_;
  from_cancel cancel_;
  std::shared_ptr<from_async_link> link_;
  std::uint64_t pull_ = 0;
  std::optional<answered> sync_;
  bool reading_ = false;    // Node: `reading`
  bool in_flight_ = false;  // a pull waits for its answer
  bool in_next_ = false;    // inside next_()
  bool stopped_ = false;    // destroyed: no more pulls, answers dropped
};

}  // namespace detail

void from_completion::item(std::string value) const {
  if (detail::from_async_source* s = link_ ? link_->source : nullptr)
    s->answer(pull_, detail::from_async_source::kind::item, std::move(value), {});
}

void from_completion::end() const {
  if (detail::from_async_source* s = link_ ? link_->source : nullptr)
    s->answer(pull_, detail::from_async_source::kind::end, {}, {});
}

void from_completion::error(std::error_code ec) const {
  if (detail::from_async_source* s = link_ ? link_->source : nullptr)
    s->answer(pull_, detail::from_async_source::kind::error, {}, ec);
}

bool from_completion::cancelled() const noexcept {
  detail::from_async_source* s = link_ ? link_->source : nullptr;
  return !s || !s->waiting_for(pull_);
}

namespace {

// Node: Readable.from(string): read() pushes the string and the end.
class one_chunk_source final : public source {
 public:
  explicit one_chunk_source(std::string s) : s_(std::move(s)) {}
  void read(std::size_t) override {
    stream().push(std::move(s_));
    push_eof();
  }

 private:
  std::string s_;
};

readable_options stream_options(const from_options& o, std::size_t default_hwm) {
  readable_options r;
  r.high_water_mark = o.high_water_mark.value_or(default_hwm);
  r.object_mode = o.object_mode;
  r.auto_destroy = o.auto_destroy;
  r.emit_close = o.emit_close;
  r.event_loop = o.event_loop;
  return r;
}

}  // namespace

std::unique_ptr<readable> readable_from_next(from_next next, const from_options& options) {
  if (!next) throw stream_error(make_error_code(errc::invalid_arg_type), "readable_from needs an iterable");
  return std::make_unique<readable>(std::make_unique<from_source>(std::move(next)), stream_options(options, 1));
}

std::unique_ptr<readable> readable_from_async(from_async_next next, from_cancel cancel, const from_options& options) {
  if (!next) throw stream_error(make_error_code(errc::invalid_arg_type), "readable_from_async needs a pull function");
  return std::make_unique<readable>(std::make_unique<detail::from_async_source>(std::move(next), std::move(cancel)),
                                    stream_options(options, 1));
}

std::unique_ptr<readable> readable_from_async(from_async_next next, const from_options& options) {
  return readable_from_async(std::move(next), nullptr, options);
}

std::unique_ptr<readable> readable_from(std::string_view s, const from_options& options) {
  return std::make_unique<readable>(std::make_unique<one_chunk_source>(std::string(s)),
                                    stream_options(options, get_default_high_water_mark(options.object_mode)));
}

}  // namespace sluice
