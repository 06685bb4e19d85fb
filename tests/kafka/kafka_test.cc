// kafka_sink and make_kafka_writable on librdkafka's mock cluster
// (test.mock.num.brokers: brokers inside the producer, on loopback, nothing
// to install). Every test runs the loop until it is idle: no timed
// assertion; the mock's deadlines ("message.timeout.ms") bound the waits.
#include "support/printers.h"

#include <librdkafka/rdkafka.h>
#include <librdkafka/rdkafka_mock.h>

#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "sluice/base/errors.h"
#include "sluice/kafka/kafka_error.h"
#include "sluice/kafka/kafka_sink.h"
#include "sluice/kafka/kafka_writable.h"
#include "sluice/loop/loop.h"
#include "support/must_call.h"

using namespace sluice;
using sluice::test::must_call;

namespace {

using config = std::vector<std::pair<std::string, std::string>>;

kafka_options mock_options(config extra = {}) {
  kafka_options o{.topic = "logs", .config = {{"test.mock.num.brokers", "3"}, {"linger.ms", "1"}, {"log_level", "4"}}};
  for (auto& kv : extra) o.config.push_back(std::move(kv));
  return o;
}

// The handle knows its sink: no cast.
kafka_sink& sink_of(kafka_writable& w) { return w.get_sink(); }
rd_kafka_mock_cluster_t* mock_of(kafka_writable& w) { return rd_kafka_handle_mock_cluster(sink_of(w).handle()); }

// Every callback of n writes: how often each was called and with what.
struct reports {
  explicit reports(std::size_t n) : calls(n), errors(n) {}
  std::vector<int> calls;
  std::vector<std::error_code> errors;
  write_cb cb(std::size_t i) {
    return [this, i](std::error_code ec) {
      ++calls[i];
      errors[i] = ec;
    };
  }
  bool each_once() const {
    for (int c : calls)
      if (c != 1) return false;
    return true;
  }
  std::size_t count(std::error_code ec) const {
    std::size_t n = 0;
    for (std::size_t i = 0; i < calls.size(); ++i) n += calls[i] == 1 && errors[i] == ec;
    return n;
  }
  std::size_t called() const {
    std::size_t n = 0;
    for (int c : calls) n += c > 0;
    return n;
  }
};

// The Kafka protocol's ApiKey of a Produce request.
constexpr std::int16_t produce_api_key = 0;

std::string frame_buffer;

std::string message(std::size_t i) { return "message " + std::to_string(i); }

}  // namespace

TEST_CASE("N messages give N delivery reports, each callback once, all before 'finish'") {
  constexpr std::size_t n = 2000;
  reports r(n);
  must_call ended;
  bool finished = false;
  std::size_t called_at_finish = 0;
  {
    auto out = make_kafka_writable(mock_options());
    out->on(event::finish, [&] {
      finished = true;
      called_at_finish = r.called();
    });
    out->on(event::error, [](std::error_code ec) { FAIL("unexpected error: " << ec.message()); });
    for (std::size_t i = 0; i < n; ++i) out->write(message(i), r.cb(i));
    // Nothing is delivered inside write(): the reports come from the loop.
    CHECK(r.called() == 0);
    CHECK(sink_of(*out).in_flight() == n);
    out->end(ended.cb());
    loop::current().run();
    CHECK(sink_of(*out).in_flight() == 0);
  }
  CHECK(finished);
  CHECK(called_at_finish == n);
  CHECK(r.each_once());
  CHECK(r.count({}) == n);
  CHECK(ended.error() == std::error_code{});
}

TEST_CASE("a full librdkafka queue makes write() return false; 'drain' follows, and nothing is dropped") {
  constexpr std::size_t n = 500;
  reports r(n);
  std::size_t refused = 0;
  std::size_t drains = 0;
  bool waited_for_room = false;
  {
    auto out = make_kafka_writable(mock_options({{"queue.buffering.max.messages", "10"}}));
    out->on(event::error, [](std::error_code ec) { FAIL("unexpected error: " << ec.message()); });
    std::size_t next = 0;
    // Writes until write() says stop, then again at each 'drain'.
    auto pump = [&] {
      while (next < n) {
        const std::size_t i = next++;
        if (!out->write(message(i), r.cb(i))) {
          ++refused;
          waited_for_room = waited_for_room || sink_of(*out).waiting_for_room();
          return;
        }
      }
      out->end();
    };
    out->on(event::drain, [&] {
      ++drains;
      CHECK(!sink_of(*out).waiting_for_room());
      pump();
    });
    pump();
    loop::current().run();
    CHECK(out->writable_finished());
  }
  CHECK(refused > 0);
  CHECK(waited_for_room);
  CHECK(drains == refused);
  CHECK(r.each_once());
  CHECK(r.count({}) == n);
}

TEST_CASE("messages written past the full queue wait in the stream, in order, and all land") {
  constexpr std::size_t n = 300;
  reports r(n);
  {
    auto out = make_kafka_writable(mock_options({{"queue.buffering.max.messages", "5"}}));
    bool refused = false;
    // Ignores write()'s false: the stream holds what librdkafka cannot.
    for (std::size_t i = 0; i < n; ++i) refused = !out->write(message(i), r.cb(i)) || refused;
    CHECK(refused);
    CHECK(out->writable_length() > 0);
    out->end();
    loop::current().run();
    CHECK(out->writable_finished());
  }
  CHECK(r.each_once());
  CHECK(r.count({}) == n);
}

// kafka_writable::write() hands a message to librdkafka itself when the
// stream is idle (kafka_writable.cc, write_direct()); these tests hold it to
// the stream's rules: it never passes a message that waits in the stream,
// nor one the stream would refuse.

TEST_CASE("writes made from delivery callbacks, past a full queue, keep their order on one partition") {
  constexpr std::size_t n = 2000;
  constexpr std::size_t first = 100;
  reports r(n);
  std::vector<std::size_t> order;
  {
    // Small batches, several in flight: a turn of the loop reads several
    // reports' events, and the first one read makes room in librdkafka's
    // queue while the callbacks of the next still run, before the stream
    // hands librdkafka what waits in it.
    kafka_options o = mock_options(
        {{"queue.buffering.max.messages", "50"}, {"batch.num.messages", "5"}, {"enable.idempotence", "true"}});
    o.partition = 0;  // one partition, idempotent: librdkafka reports in the order produced
    writable_options stream_options;
    // The default mark (one byte) makes write() return false, and the
    // stream owe a 'drain', whenever a message waits; a high one leaves
    // only the messages themselves to say that the stream is not idle.
    SUBCASE("the default high-water mark") {}
    SUBCASE("a high-water mark above what waits") { stream_options.high_water_mark = 1 << 20; }
    auto out = make_kafka_writable(o, stream_options);
    out->on(event::error, [](std::error_code ec) { FAIL("unexpected error: " << ec.message()); });
    writable& plain = *out;  // the stream's own write(), with no direct path
    std::size_t next = 0;
    bool refused = false;
    std::function<void()> write_next = [&] {
      const std::size_t i = next++;
      write_cb cb = [&, i](std::error_code ec) {
        r.cb(i)(ec);
        order.push_back(i);
        // A report makes room: a write from here finds librdkafka's queue
        // open while older messages may still wait in the stream.
        if (next < n) write_next();
        else if (next == n && !out->writable_ended()) out->end();
      };
      const bool room = i % 2 ? out->write(message(i), std::move(cb)) : plain.write(message(i), std::move(cb));
      refused = refused || !room;
    };
    for (std::size_t i = 0; i < first; ++i) write_next();
    CHECK(refused == !stream_options.high_water_mark);
    CHECK(sink_of(*out).waiting_for_room());
    loop::current().run();
    CHECK(out->writable_finished());
  }
  CHECK(r.each_once());
  CHECK(r.count({}) == n);
  REQUIRE(order.size() == n);
  for (std::size_t i = 0; i < n; ++i) CHECK(order[i] == i);
}

TEST_CASE("a write while corked waits in the stream until uncork()") {
  must_call delivered(3);
  {
    auto out = make_kafka_writable(mock_options());
    out->cork();
    out->write("one", delivered.cb());
    out->write(std::string("two"), delivered.cb());
    out->write(std::string_view("three"), delivered.cb());
    CHECK(sink_of(*out).in_flight() == 0);
    CHECK(out->writable_length() == 11);
    out->uncork();
    CHECK(sink_of(*out).in_flight() == 3);
    CHECK(out->writable_length() == 0);
    out->end();
    loop::current().run();
    CHECK(out->writable_finished());
  }
  for (int i = 0; i < delivered.calls(); ++i) CHECK(delivered.error(i) == std::error_code{});
}

TEST_CASE("a write after end() fails with ERR_STREAM_WRITE_AFTER_END; librdkafka never gets it") {
  must_call first;
  must_call late;
  std::error_code stream_error;
  {
    auto out = make_kafka_writable(mock_options());
    out->on(event::error, [&](std::error_code ec) { stream_error = ec; });
    out->write(message(0), first.cb());
    out->end();
    CHECK(!out->write(message(1), late.cb()));
    CHECK(sink_of(*out).in_flight() == 1);
    loop::current().run();
  }
  CHECK(late.error() == make_error_code(errc::write_after_end));
  CHECK(stream_error == make_error_code(errc::write_after_end));
}

TEST_CASE("after destroy(), a write fails with ERR_STREAM_DESTROYED; librdkafka never gets it") {
  must_call late;
  {
    auto out = make_kafka_writable(mock_options());
    out->destroy();
    CHECK(!out->write(message(0), late.cb()));
    CHECK(sink_of(*out).in_flight() == 0);
    loop::current().run();
  }
  CHECK(late.error() == make_error_code(errc::destroyed));
}

TEST_CASE("with max_buffered, a message over the cap is refused on an idle stream, never produced") {
  must_call over;
  must_call fits;
  {
    auto out = make_kafka_writable(mock_options(), {.max_buffered = 10});
    CHECK(!out->write(std::string(20, 'x'), over.cb()));
    CHECK(sink_of(*out).in_flight() == 0);
    CHECK(out->refused_writes() == 1);
    CHECK(out->write("small", fits.cb()));
    out->end();
    loop::current().run();
    CHECK(out->writable_finished());
  }
  CHECK(over.error() == make_error_code(errc::buffer_full));
  CHECK(fits.error() == std::error_code{});
}

TEST_CASE("a broker's error injected by the mock reaches the callback and the stream's 'error'") {
  constexpr std::size_t n = 3;
  reports r(n);
  std::error_code stream_error;
  bool closed = false;
  const auto denied = make_kafka_error(RD_KAFKA_RESP_ERR_TOPIC_AUTHORIZATION_FAILED);
  {
    // One partition: without a key, librdkafka's partitioner spreads the
    // messages over the partitions at random, and message 0's request may then
    // come after another's failure has destroyed the stream (and purged it).
    kafka_options o = mock_options();
    o.partition = 0;
    auto out = make_kafka_writable(o);
    // Every Produce request fails: a permanent error, which librdkafka does
    // not retry.
    const std::vector<rd_kafka_resp_err_t> errors(20, RD_KAFKA_RESP_ERR_TOPIC_AUTHORIZATION_FAILED);
    rd_kafka_mock_push_request_errors_array(mock_of(*out), produce_api_key, errors.size(), errors.data());
    out->on(event::error, [&](std::error_code ec) { stream_error = ec; });
    out->on(event::close, [&] { closed = true; });
    for (std::size_t i = 0; i < n; ++i) out->write(message(i), r.cb(i));
    out->end();
    loop::current().run();
    CHECK(out->destroyed());
    CHECK(!out->writable_finished());
  }
  CHECK(stream_error == denied);
  CHECK(closed);
  CHECK(r.each_once());
  CHECK(r.errors[0] == denied);
  // The others failed with it, or were purged when the stream was destroyed.
  for (std::size_t i = 0; i < n; ++i) CHECK(r.errors[i]);
  CHECK(denied.message() == "TOPIC_AUTHORIZATION_FAILED: Broker: Topic authorization failed");
}

TEST_CASE("a message librdkafka refuses at once (too large) fails its write and the stream; the one before lands") {
  reports r(2);
  std::error_code stream_error;
  const auto too_large = make_kafka_error(RD_KAFKA_RESP_ERR_MSG_SIZE_TOO_LARGE);
  {
    kafka_options o = mock_options({{"message.max.bytes", "1000"}});
    o.partition = 0;
    auto out = make_kafka_writable(o);
    out->on(event::error, [&](std::error_code ec) { stream_error = ec; });
    out->write(message(0), r.cb(0));
    out->write(std::string(2000, 'x'), r.cb(1));
    loop::current().run();
    CHECK(out->destroyed());
  }
  CHECK(r.each_once());
  CHECK(r.errors[1] == too_large);
  CHECK(stream_error == too_large);
  // Message 0 was produced before: delivered, or purged when the stream was
  // destroyed, but called once either way.
  CHECK(r.calls[0] == 1);
}

TEST_CASE("with refusals_fail_alone, a message refused as too large fails its callback alone; the others land") {
  reports r(3);
  bool errored = false;
  must_call ended;
  const auto too_large = make_kafka_error(RD_KAFKA_RESP_ERR_MSG_SIZE_TOO_LARGE);
  {
    kafka_options o = mock_options({{"message.max.bytes", "1000"}});
    o.refusals_fail_alone = true;
    auto out = make_kafka_writable(o);
    out->on(event::error, [&](std::error_code) { errored = true; });
    out->write(message(0), r.cb(0));
    out->write(std::string(2000, 'x'), r.cb(1));
    CHECK(r.calls[1] == 0);  // never inside write()
    out->write(message(2), r.cb(2));
    out->end(ended.cb());  // 'finish': every report came, and the stream was not destroyed by one
    loop::current().run();
  }
  CHECK(r.each_once());
  CHECK(r.errors[0] == std::error_code{});
  CHECK(r.errors[1] == too_large);
  CHECK(is_kafka_refusal(r.errors[1]));
  CHECK(r.errors[2] == std::error_code{});
  CHECK(!errored);
  CHECK(ended.error() == std::error_code{});
  CHECK(!is_kafka_refusal(make_kafka_error(RD_KAFKA_RESP_ERR__MSG_TIMED_OUT)));
}

TEST_CASE("all brokers down past message.timeout.ms: the messages time out and the stream errors") {
  constexpr std::size_t n = 10;
  reports r(n);
  std::error_code stream_error;
  {
    auto out = make_kafka_writable(mock_options({{"message.timeout.ms", "300"}}));
    rd_kafka_mock_broker_set_down(mock_of(*out), -1);
    out->on(event::error, [&](std::error_code ec) { stream_error = ec; });
    for (std::size_t i = 0; i < n; ++i) out->write(message(i), r.cb(i));
    out->end();
    loop::current().run();
  }
  const auto timed_out = make_kafka_error(RD_KAFKA_RESP_ERR__MSG_TIMED_OUT);
  CHECK(stream_error == timed_out);
  CHECK(r.each_once());
  // librdkafka times the messages out queue by queue: the first one to time
  // out errors the stream, whose destroy purges those not reported yet, which
  // need not be message 0 (seen on a busy machine: message 0 purged).
  const auto purged = make_kafka_error(RD_KAFKA_RESP_ERR__PURGE_QUEUE);
  std::size_t timed_out_count = 0;
  for (std::size_t i = 0; i < n; ++i) {
    CHECK((r.errors[i] == timed_out || r.errors[i] == purged));
    timed_out_count += r.errors[i] == timed_out;
  }
  CHECK(timed_out_count >= 1);
}

TEST_CASE("end() flushes: the end callback and 'finish' come after the last delivery report") {
  constexpr std::size_t n = 50;
  reports r(n);
  std::size_t called_at_end_cb = 0;
  {
    // A long linger: librdkafka holds the messages; only the flush at the
    // end's final step sends them... or linger.ms does: either way, 'finish'
    // waits.
    auto out = make_kafka_writable(mock_options({{"linger.ms", "50"}}));
    for (std::size_t i = 0; i < n; ++i) out->write(message(i), r.cb(i));
    out->end([&](std::error_code ec) {
      CHECK(!ec);
      called_at_end_cb = r.called();
    });
    loop::current().run();
  }
  CHECK(called_at_end_cb == n);
  CHECK(r.count({}) == n);
}

TEST_CASE("destroy() mid-flight calls every callback once, from the loop, with librdkafka's purge codes") {
  constexpr std::size_t n = 1000;
  reports r(n);
  std::error_code stream_error;
  bool closed = false;
  {
    // Messages linger in librdkafka long enough to be purged.
    auto out = make_kafka_writable(mock_options({{"linger.ms", "10000"}, {"queue.buffering.max.messages", "600"}}));
    out->on(event::error, [&](std::error_code ec) { stream_error = ec; });
    out->on(event::close, [&] { closed = true; });
    for (std::size_t i = 0; i < n; ++i) out->write(message(i), r.cb(i));
    CHECK(sink_of(*out).waiting_for_room());  // 600 in librdkafka, the rest wait in the stream
    out->destroy();
    CHECK(r.called() == 0);  // not inside destroy()
    loop::current().run();
    CHECK(closed);
  }
  CHECK(!stream_error);
  CHECK(r.each_once());
  const std::size_t purged = r.count(make_kafka_error(RD_KAFKA_RESP_ERR__PURGE_QUEUE));
  const std::size_t never_produced = r.count(make_error_code(errc::destroyed));
  CHECK(purged == 600);
  CHECK(purged + never_produced == n);
}

TEST_CASE("destroy() after end(): the end callback hears the stream was destroyed, every write's once") {
  constexpr std::size_t n = 100;
  reports r(n);
  must_call ended;
  bool finished = false;
  {
    auto out = make_kafka_writable(mock_options({{"linger.ms", "10000"}}));
    out->on(event::finish, [&] { finished = true; });
    for (std::size_t i = 0; i < n; ++i) out->write(message(i), r.cb(i));
    out->end(ended.cb());
    loop::current().run_until_idle();  // the final step now waits for the reports
    CHECK(!finished);
    out->destroy();
    loop::current().run();
  }
  CHECK(!finished);
  CHECK(ended.error() == make_error_code(errc::destroyed));
  CHECK(r.each_once());
  CHECK(r.count(make_kafka_error(RD_KAFKA_RESP_ERR__PURGE_QUEUE)) == n);
}

TEST_CASE("a stream deleted mid-flight calls every callback once, in its destructor") {
  constexpr std::size_t n = 100;
  reports r(n);
  {
    auto out = make_kafka_writable(mock_options({{"linger.ms", "10000"}}));
    for (std::size_t i = 0; i < n; ++i) out->write(message(i), r.cb(i));
  }
  CHECK(r.each_once());
  CHECK(r.count(make_kafka_error(RD_KAFKA_RESP_ERR__PURGE_QUEUE)) == n);
  loop::current().run();  // nothing left for the loop
  CHECK(!loop::current().alive());
}

namespace {

// A producer with no broker to reach: the port refuses at once, so that
// librdkafka reports the refused connection (an error event) within
// microseconds of rd_kafka_new(), racing the sink's setup.
kafka_options unreachable_options(config extra = {}) {
  kafka_options o{.topic = "logs", .config = {{"bootstrap.servers", "127.0.0.1:1"}, {"log_level", "0"}}};
  for (auto& kv : extra) o.config.push_back(std::move(kv));
  return o;
}

// Each round is a new producer, so that the race is run many times.
constexpr int unreachable_rounds = 20;

}  // namespace

TEST_CASE("destroy() with messages to an unreachable broker calls every callback once with an error, and the loop ends") {
  // librdkafka 2.0.2 signals the reports' fd only when an event enters an
  // empty queue: when the refused connection was queued before the fd was
  // set, the purge's reports never woke the loop, which waited for ever.
  for (int round = 0; round < unreachable_rounds; ++round) {
    CAPTURE(round);
    constexpr std::size_t n = 100;
    reports r(n);
    bool closed = false;
    {
      auto out = make_kafka_writable(unreachable_options());
      out->on(event::close, [&] { closed = true; });
      for (std::size_t i = 0; i < n; ++i) out->write(message(i), r.cb(i));
      out->destroy();
      CHECK(r.called() == 0);  // not inside destroy()
      loop::current().run();
      CHECK(closed);
    }
    CHECK(r.each_once());
    CHECK(r.count(make_kafka_error(RD_KAFKA_RESP_ERR__PURGE_QUEUE)) == n);
    CHECK(!loop::current().alive());
  }
}

TEST_CASE("a producer whose broker is unreachable from the start hears its reports: the messages time out") {
  // The same race without destroy(): the timed-out messages' reports, and
  // the end, must still come.
  for (int round = 0; round < unreachable_rounds / 4; ++round) {
    CAPTURE(round);
    constexpr std::size_t n = 10;
    reports r(n);
    must_call ended;
    {
      auto out = make_kafka_writable(unreachable_options({{"message.timeout.ms", "10"}}));
      for (std::size_t i = 0; i < n; ++i) out->write(message(i), r.cb(i));
      out->end(ended.cb());
      loop::current().run();
    }
    CHECK(r.each_once());
    CHECK(r.count(make_kafka_error(RD_KAFKA_RESP_ERR__MSG_TIMED_OUT)) == n);
    CHECK(ended.error());  // the first failed report destroyed the stream
  }
}

namespace {

// `n` messages of partition 0 of "logs", read from the producer's mock
// cluster by a consumer of its own (bounded: 100 polls at most). The
// messages go before the consumer, as librdkafka wants.
struct consumed {
  rd_kafka_t* consumer = nullptr;
  std::vector<rd_kafka_message_t*> messages;
  consumed(kafka_writable& w, std::size_t n) {
    char errstr[512];
    rd_kafka_conf_t* conf = rd_kafka_conf_new();
    rd_kafka_conf_set(conf, "bootstrap.servers", rd_kafka_mock_cluster_bootstraps(mock_of(w)), errstr, sizeof errstr);
    rd_kafka_conf_set(conf, "group.id", "kafka_test", errstr, sizeof errstr);
    rd_kafka_conf_set(conf, "log_level", "4", errstr, sizeof errstr);
    consumer = rd_kafka_new(RD_KAFKA_CONSUMER, conf, errstr, sizeof errstr);
    REQUIRE(consumer);
    rd_kafka_topic_partition_list_t* parts = rd_kafka_topic_partition_list_new(1);
    rd_kafka_topic_partition_list_add(parts, "logs", 0)->offset = RD_KAFKA_OFFSET_BEGINNING;
    rd_kafka_assign(consumer, parts);
    rd_kafka_topic_partition_list_destroy(parts);
    for (int polls = 0; polls < 100 && messages.size() < n; ++polls) {
      rd_kafka_message_t* m = rd_kafka_consumer_poll(consumer, 100);
      if (m && m->err) rd_kafka_message_destroy(m);
      else if (m) messages.push_back(m);
    }
  }
  ~consumed() {
    for (auto* m : messages) rd_kafka_message_destroy(m);
    rd_kafka_consumer_close(consumer);
    rd_kafka_destroy(consumer);
  }
};

std::string_view header(rd_kafka_message_t* m, const char* name) {
  rd_kafka_headers_t* hdrs = nullptr;
  const void* value = nullptr;
  std::size_t size = 0;
  if (rd_kafka_message_headers(m, &hdrs) || rd_kafka_header_get_last(hdrs, name, &value, &size)) return "(none)";
  return {static_cast<const char*>(value), size};
}

}  // namespace

TEST_CASE("produce() sends a key and headers on a framed stream; write() a bare value") {
  must_call delivered(3);
  auto options = mock_options();
  options.framed = true;
  options.partition = 0;
  auto out = make_kafka_writable(options);
  out->produce("user-42", "hello", {{"host", "web1"}, {"level", "info"}}, delivered.cb());
  out->produce("", "no key, no header", delivered.cb());
  encode_kafka_message(frame_buffer, "k", "framed by hand");
  out->write(frame_buffer, delivered.cb());
  out->end();
  loop::current().run();
  CHECK(out->writable_finished());
  CHECK(delivered.calls() == 3);
  for (int i = 0; i < delivered.calls(); ++i) CHECK(delivered.error(i) == std::error_code{});

  consumed read(*out, 3);
  auto& got = read.messages;
  REQUIRE(got.size() == 3);
  auto key = [](rd_kafka_message_t* m) { return std::string_view(static_cast<const char*>(m->key), m->key_len); };
  auto value = [](rd_kafka_message_t* m) {
    return std::string_view(static_cast<const char*>(m->payload), m->len);
  };
  CHECK(key(got[0]) == "user-42");
  CHECK(value(got[0]) == "hello");
  CHECK(header(got[0], "host") == "web1");
  CHECK(header(got[0], "level") == "info");
  CHECK(got[1]->key == nullptr);
  CHECK(value(got[1]) == "no key, no header");
  CHECK(header(got[1], "host") == "(none)");
  CHECK(key(got[2]) == "k");
  CHECK(value(got[2]) == "framed by hand");
}

TEST_CASE("produce() past a full queue: keyed messages wait in the stream like bare ones, and all land") {
  constexpr std::size_t n = 300;
  reports r(n);
  {
    auto options = mock_options({{"queue.buffering.max.messages", "5"}});
    options.framed = true;
    auto out = make_kafka_writable(options);
    out->on(event::error, [](std::error_code ec) { FAIL("unexpected error: " << ec.message()); });
    bool refused = false;
    bool waited_for_room = false;
    for (std::size_t i = 0; i < n; ++i) {
      refused = !out->produce("key " + std::to_string(i % 7), message(i), {{"n", "1"}}, r.cb(i)) || refused;
      waited_for_room = waited_for_room || sink_of(*out).waiting_for_room();
    }
    CHECK(refused);
    CHECK(waited_for_room);
    out->end();
    loop::current().run();
    CHECK(out->writable_finished());
  }
  CHECK(r.each_once());
  CHECK(r.count({}) == n);
}

TEST_CASE("a chunk that is no frame fails on a framed stream, and produce() refuses an unframed one") {
  must_call bad;
  {
    auto options = mock_options();
    options.framed = true;
    auto out = make_kafka_writable(options);
    out->on(event::error, [](std::error_code) {});
    out->write("xy", bad.cb());
    loop::current().run();
    CHECK(out->destroyed());
  }
  CHECK(bad.error() == std::make_error_code(std::errc::invalid_argument));

  auto plain = make_kafka_writable(mock_options());
  CHECK_THROWS_AS(plain->produce("k", "v"), stream_error);
}

TEST_CASE("a bad configuration throws, or sets the error of the non-throwing twin") {
  CHECK_THROWS_AS(make_kafka_writable({.topic = "logs", .config = {{"no.such.property", "1"}}}), stream_error);
  CHECK_THROWS_AS(make_kafka_writable({.topic = "", .config = {{"test.mock.num.brokers", "1"}}}), stream_error);
  // The throwing form's what() carries librdkafka's text, naming the property.
  try {
    make_kafka_writable({.topic = "logs", .config = {{"no.such.property", "1"}}});
  } catch (const stream_error& e) {
    CHECK(std::string(e.what()).find("no.such.property") != std::string::npos);
  }
  std::error_code ec;
  auto none = make_kafka_writable({.topic = "logs", .config = {{"no.such.property", "1"}}}, {}, ec);
  CHECK(!none);
  CHECK(ec == make_kafka_error(RD_KAFKA_RESP_ERR__INVALID_ARG));
  // The sink's own factory, the same way.
  CHECK_THROWS_AS(kafka_sink::open({.topic = ""}), stream_error);
  ec.clear();
  CHECK(!kafka_sink::open({.topic = "", .config = {{"test.mock.num.brokers", "1"}}}, ec));
  CHECK(ec == make_kafka_error(RD_KAFKA_RESP_ERR__INVALID_ARG));
  auto sink = kafka_sink::open(mock_options(), ec);
  CHECK(sink);
  CHECK(!ec);
}
