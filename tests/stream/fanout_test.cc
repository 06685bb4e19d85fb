// fanout: one input to many subscribers, and the three policies for a slow one.
#include "support/printers.h"

#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "sluice/base/errors.h"
#include "sluice/loop/loop.h"
#include "support/memory_sink.h"
#include "sluice/stream/fanout.h"
#include "support/must_call.h"

using namespace sluice;
using sluice::test::must_call;

namespace {

// A subscriber that reads only when told, as a socket whose peer reads
// slowly: a write completes at step() (that one write), or at once after open().
class slow_sink : public sink {
 public:
  slow_sink() : sink({}) {}
  void write(std::string_view chunk, write_done done) override {
    data_.append(chunk);
    if (open_)
      done();
    else
      pending_ = done;
  }
  void step() {
    if (pending_) std::exchange(pending_, std::nullopt).value()();
  }
  void open() {
    open_ = true;
    step();
  }
  void close_gate() { open_ = false; }
  const std::string& data() const { return data_; }

 private:
  std::string data_;
  std::optional<write_done> pending_;
  bool open_ = false;
};

struct subscriber {
  std::unique_ptr<writable> w;
  memory_sink* memory = nullptr;
  slow_sink* slow = nullptr;
  std::vector<std::string> events;
  std::string data() const { return memory ? memory->data() : slow->data(); }
};

subscriber make_subscriber(loop& l, bool slow, std::size_t hwm = 16384) {
  subscriber s;
  std::unique_ptr<sink> k;
  if (slow) {
    auto g = std::make_unique<slow_sink>();
    s.slow = g.get();
    k = std::move(g);
  } else {
    auto m = std::make_unique<memory_sink>();
    s.memory = m.get();
    k = std::move(m);
  }
  s.w = std::make_unique<writable>(std::move(k), writable_options{.high_water_mark = hwm, .event_loop = &l});
  return s;
}

std::string numbered(int i) { return "message " + std::to_string(1000 + i) + "\n"; }  // 13 bytes

}  // namespace

TEST_CASE("every subscriber gets every message whole and in order; end() ends them, then the input finishes") {
  loop l;
  fanout hub({.input = {.event_loop = &l}});
  std::vector<subscriber> subs;
  for (int i = 0; i < 3; ++i) subs.push_back(make_subscriber(l, false));
  std::vector<std::string> order;
  for (int i = 0; i < 3; ++i) {
    hub.add(*subs[i].w);
    subs[i].w->on(event::finish, [&order, i] { order.push_back("finish " + std::to_string(i)); });
  }
  hub.input().on(event::finish, [&] { order.push_back("input finish"); });
  must_call cbs(100);
  std::string expected;
  for (int i = 0; i < 100; ++i) {
    hub.input().write(numbered(i), cbs.cb());
    expected += numbered(i);
  }
  must_call end_cb(1);
  hub.input().end(end_cb.cb());
  l.run();
  for (auto& s : subs) CHECK(s.data() == expected);
  REQUIRE(order.size() == 4);
  CHECK(order.back() == "input finish");
  CHECK(hub.messages_in() == 100);
  CHECK(hub.messages_sent() == 300);
  CHECK(hub.messages_dropped() == 0);
}

TEST_CASE("pause: the input waits for the slowest subscriber, which never holds much more than its high-water mark") {
  loop l;
  fanout hub({.policy = slow_policy::pause, .input = {.high_water_mark = 64, .event_loop = &l}});
  subscriber fast = make_subscriber(l, false);
  subscriber slow = make_subscriber(l, true, 32);
  hub.add(*fast.w);
  hub.add(*slow.w);
  must_call cbs(200);
  std::string expected;
  int written = 0;
  std::size_t most_held = 0;
  bool input_said_wait = false;
  // A producer that respects write()'s false, as pipe() does.
  std::function<void()> produce = [&] {
    while (written < 200) {
      expected += numbered(written);
      const bool more = hub.input().write(numbered(written++), cbs.cb());
      if (!more) {
        input_said_wait = true;
        hub.input().once(event::drain, [&] { produce(); });
        return;
      }
    }
    hub.input().end();
  };
  produce();
  // Let the slow subscriber read one write per turn for a while.
  for (int turn = 0; turn < 50; ++turn) {
    l.run_until_idle();
    most_held = std::max(most_held, slow.w->writable_length());
    slow.slow->step();
  }
  slow.slow->open();
  l.run();
  CHECK(input_said_wait);
  CHECK(fast.data() == expected);
  CHECK(slow.data() == expected);
  CHECK(hub.messages_dropped() == 0);
  // its high-water mark (32) plus the input's one batch (at most 64 + a message)
  CHECK(most_held <= 32 + 64 + 13);
}

TEST_CASE("drop: a slow subscriber skips whole messages, is told how many, and the others get everything") {
  loop l;
  fanout hub({.policy = slow_policy::drop,
              .max_buffered = 40,
              .drop_notice = [](std::uint64_t n) { return "dropped " + std::to_string(n) + "\n"; },
              .input = {.event_loop = &l}});
  subscriber fast = make_subscriber(l, false);
  subscriber slow = make_subscriber(l, true);
  hub.add(*fast.w);
  hub.add(*slow.w);
  must_call cbs(24);
  std::string expected;
  for (int i = 0; i < 10; ++i) {
    expected += numbered(i);
    CHECK(hub.input().write(numbered(i), cbs.cb()));
  }
  l.run_until_idle();
  // The slow one holds 3 messages (39 bytes <= 40); the 4th would pass 40.
  CHECK(slow.w->writable_length() <= 40);
  CHECK(hub.stats(*slow.w)->messages_dropped == 7);
  slow.slow->open();
  l.run_until_idle();
  for (int i = 10; i < 20; ++i) {
    expected += numbered(i);
    hub.input().write(numbered(i), cbs.cb());
  }
  l.run_until_idle();
  // Stalled again: the last messages are dropped, and told before the end.
  slow.slow->close_gate();
  for (int i = 20; i < 24; ++i) {
    expected += numbered(i);
    hub.input().write(numbered(i), cbs.cb());
  }
  hub.input().end();
  l.run_until_idle();
  slow.slow->open();
  l.run();
  CHECK(fast.data() == expected);
  std::string told = numbered(0) + numbered(1) + numbered(2) + "dropped 7\n";
  for (int i = 10; i < 23; ++i) told += numbered(i);
  told += "dropped 1\n";
  CHECK(slow.data() == told);
  CHECK(hub.messages_dropped() == 8);
  CHECK(hub.cut_off() == 0);
}

TEST_CASE("disconnect: a subscriber past max_buffered is destroyed with ERR_SLUICE_BUFFER_FULL, the rest go on") {
  loop l;
  fanout hub({.policy = slow_policy::disconnect, .max_buffered = 40, .input = {.event_loop = &l}});
  subscriber fast = make_subscriber(l, false);
  subscriber slow = make_subscriber(l, true);
  std::error_code slow_error;
  bool slow_closed = false;
  slow.w->on(event::error, [&](std::error_code ec) { slow_error = ec; });
  slow.w->on(event::close, [&] { slow_closed = true; });
  hub.add(*fast.w);
  hub.add(*slow.w);
  std::vector<std::pair<writable*, subscriber_stats>> left;
  hub.on_leave([&](writable& w, const subscriber_stats& st) { left.emplace_back(&w, st); });
  must_call cbs(10);
  std::string expected;
  for (int i = 0; i < 10; ++i) {
    expected += numbered(i);
    hub.input().write(numbered(i), cbs.cb());
  }
  hub.input().end();
  l.run();
  CHECK(fast.data() == expected);
  CHECK(slow_closed);
  CHECK(slow_error == errc::buffer_full);
  CHECK(hub.cut_off() == 1);
  REQUIRE(left.size() == 2);
  CHECK(left[0].first == slow.w.get());
  CHECK(left[0].second.cut_off);
  CHECK(left[0].second.messages_sent == 3);
  CHECK(hub.subscribers() == 0);
}

TEST_CASE("a subscriber that closes leaves; one added later gets the messages from then on") {
  loop l;
  fanout hub({.input = {.event_loop = &l}});
  subscriber a = make_subscriber(l, false);
  subscriber b = make_subscriber(l, false);
  hub.add(*a.w);
  hub.input().write("one\n");
  l.run_until_idle();
  a.w->destroy();
  l.run_until_idle();
  CHECK(hub.subscribers() == 0);
  hub.add(*b.w);
  hub.input().write("two\n");
  hub.input().end();
  l.run();
  CHECK(a.data() == "one\n");
  CHECK(b.data() == "two\n");
  CHECK(b.w->writable_finished());
}

TEST_CASE("remove() stops sending and leaves the subscriber as it is") {
  loop l;
  fanout hub({.input = {.event_loop = &l}});
  subscriber a = make_subscriber(l, false);
  hub.add(*a.w);
  hub.input().write("one\n");
  l.run_until_idle();
  hub.remove(*a.w);
  hub.input().write("two\n");
  hub.input().end();
  l.run();
  CHECK(a.data() == "one\n");
  CHECK_FALSE(a.w->writable_ended());
  a.w->end();
  l.run();
}
