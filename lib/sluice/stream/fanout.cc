// fanout: the input's sink hands each message to every subscriber under the
// policy, and holds the input's write (pause) or final (ending) open until
// the subscribers let it go.
#include "sluice/stream/fanout.h"

#include <algorithm>
#include <optional>
#include <utility>

#include "sluice/base/errors.h"
#include "sluice/sinks/sink.h"

namespace sluice {

const char* to_string(slow_policy p) noexcept {
  switch (p) {
    case slow_policy::pause: return "pause";
    case slow_policy::drop: return "drop";
    case slow_policy::disconnect: return "disconnect";
  }
  return "?";
}

// The input's sink. A write completes at once unless a subscriber is over
// its high-water mark under pause; final completes once every subscriber has
// finished or closed.
class fanout::hub_sink : public sink {
 public:
  explicit hub_sink(fanout& hub) : sink({.writev = true, .final = true}), hub_(hub) {}

  void write(std::string_view chunk, write_done done) override {
    hub_.send(chunk);
    complete(done);
  }
  void writev(const write_batch& batch, write_done done) override {
    for (std::string_view chunk : batch) hub_.send(chunk);
    complete(done);
  }

  void final(final_done done) override {
    hub_.ending_ = true;
    if (hub_.options_.end_subscribers) {
      // end_subscriber() may settle at once; count them all first.
      hub_.ends_left_ = hub_.subs_.size();
      final_ = done;
      for (std::size_t i = 0; i < hub_.subs_.size(); ++i) hub_.end_subscriber(*hub_.subs_[i]);
      if (hub_.ends_left_ == 0) release_final();
      return;
    }
    done();
  }

  // The subscribers let go: the write or the final held open completes.
  void release_write() noexcept {
    if (write_) std::exchange(write_, std::nullopt).value()();
  }
  void release_final() noexcept {
    if (final_) std::exchange(final_, std::nullopt).value()();
  }

 private:
  void complete(write_done done) {
    if (hub_.waiting()) {
      write_ = done;
      return;
    }
    done();
  }

  fanout& hub_;
  std::optional<write_done> write_;
  std::optional<final_done> final_;
};

fanout::fanout(fanout_options options) : options_(std::move(options)) {
  auto s = std::make_unique<hub_sink>(*this);
  sink_ = s.get();
  input_ = std::make_unique<writable>(std::move(s), options_.input);
}

fanout::~fanout() {
  // The subscribers outlive the fanout: take our listeners off them.
  for (auto& s : subs_) {
    s->w->off(event::close, s->close_id);
    s->w->off(event::finish, s->finish_id);
    if (s->waited_on) s->w->off(event::drain, s->drain_id);
  }
  subs_.clear();
  waits_ = 0;
  input_.reset();
}

void fanout::add(writable& w) {
  if (stats(w)) return;
  auto owned = std::make_unique<subscriber>();
  subscriber& s = *owned;
  s.w = &w;
  s.close_id = w.on(event::close, [this, &s] {
    stop_waiting(s);
    if (ending_) subscriber_done(s);
    leave(s);
  });
  s.finish_id = w.on(event::finish, [this, &s] {
    if (ending_) subscriber_done(s);
  });
  subs_.push_back(std::move(owned));
  if (ending_ && options_.end_subscribers) {
    ++ends_left_;
    end_subscriber(s);
  }
}

void fanout::remove(writable& w) noexcept {
  for (auto& s : subs_)
    if (s->w == &w) {
      stop_waiting(*s);
      if (ending_) subscriber_done(*s);
      leave(*s);
      return;
    }
}

const subscriber_stats* fanout::stats(const writable& w) const noexcept {
  for (const auto& s : subs_)
    if (s->w == &w) return &s->stats;
  return nullptr;
}

void fanout::send(std::string_view message) {
  ++messages_in_;
  for (std::size_t i = 0; i < subs_.size(); ++i) send_to(*subs_[i], message);
}

void fanout::send_to(subscriber& s, std::string_view message) {
  writable& w = *s.w;
  if (w.destroyed() || w.writable_ended()) return;  // leaving: its 'close' is on the way
  if (options_.policy != slow_policy::pause) {
    std::string notice;
    if (s.untold != 0 && options_.drop_notice) notice = options_.drop_notice(s.untold);
    if (w.writable_length() + notice.size() + message.size() > options_.max_buffered) {
      ++s.stats.messages_dropped;
      ++totals_.messages_dropped;
      if (options_.policy == slow_policy::drop) {
        ++s.untold;
        return;
      }
      s.stats.cut_off = true;
      ++cut_off_;
      w.destroy(make_error_code(errc::buffer_full));
      return;
    }
    if (!notice.empty()) w.write(std::move(notice));
    s.untold = 0;
  }
  ++s.stats.messages_sent;
  ++totals_.messages_sent;
  s.stats.bytes_sent += message.size();
  totals_.bytes_sent += message.size();
  if (!w.write(message) && options_.policy == slow_policy::pause) wait_for_drain(s);
}

void fanout::wait_for_drain(subscriber& s) {
  if (s.waited_on) return;
  s.waited_on = true;
  ++waits_;
  s.drain_id = s.w->once(event::drain, [this, &s] {
    s.waited_on = false;  // a once-listener is gone when it runs
    --waits_;
    settle();
  });
}

void fanout::stop_waiting(subscriber& s) noexcept {
  if (!s.waited_on) return;
  s.w->off(event::drain, s.drain_id);
  s.waited_on = false;
  --waits_;
  settle();
}

void fanout::settle() noexcept {
  if (!waiting()) sink_->release_write();
}

void fanout::end_subscriber(subscriber& s) {
  if (s.w->destroyed() || s.w->writable_finished()) {
    subscriber_done(s);
    return;
  }
  if (s.w->writable_ended()) return;
  // drop: what it missed after its last message is told before its end.
  if (s.untold != 0 && options_.drop_notice) {
    s.w->write(options_.drop_notice(s.untold));
    s.untold = 0;
  }
  s.w->end();
}

void fanout::subscriber_done(subscriber& s) noexcept {
  if (s.done) return;
  s.done = true;
  if (ends_left_ != 0 && --ends_left_ == 0) sink_->release_final();
}

void fanout::leave(subscriber& s) noexcept {
  s.w->off(event::close, s.close_id);
  s.w->off(event::finish, s.finish_id);
  writable& w = *s.w;
  const subscriber_stats stats = s.stats;
  auto it = std::find_if(subs_.begin(), subs_.end(), [&](const auto& p) { return p.get() == &s; });
  if (it != subs_.end()) subs_.erase(it);  // s is gone from here on
  if (on_leave_) on_leave_(w, stats);
}

}  // namespace sluice
