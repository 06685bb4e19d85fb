// kafka_bench: 100-byte messages into librdkafka's mock cluster (3 brokers
// inside the process, on loopback) through sluice's Kafka writable, against
// a bare loop of the call the writable makes, rd_kafka_produce() (the same
// flags, RD_KAFKA_MSG_F_COPY, and partitioner; a callback counts each
// delivery report), and a bare rd_kafka_producev() loop (librdkafka's
// recommended call, ~160 instructions a message dearer); the same
// configuration, one run after the other, best of R each. Time runs from
// the first produce to the last delivery report (the producer, its mock
// cluster and the topic's metadata are set up and warmed by one message
// first).
//
//   kafka_bench [--messages N] [--runs R] [--size BYTES] [--set PROPERTY=VALUE ...]
//               [--only bare|producev|sluice|sink|generic]
//   (--only: one side alone, for a profiler; sink: the kafka_sink under a
//   host of the bench's own, without the writable, to tell their costs apart;
//   generic: the writable written through a `writable&`, the stream's path)
//   (SLUICE_BENCH_QUICK=1 in the environment: 200000 messages, 2 runs)
#include <librdkafka/rdkafka.h>
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <system_error>
#include <vector>

#include "sluice/kafka/kafka_writable.h"
#include "sluice/loop/loop.h"

namespace {

using clock_type = std::chrono::steady_clock;

std::vector<std::pair<std::string, std::string>> config = {
    {"test.mock.num.brokers", "3"},
    {"log_level", "4"},  // the mock's notices
};

struct result {
  double seconds;
  std::size_t delivered;
  double cpu_seconds;  // the whole process: librdkafka's and the mock brokers' threads too
};

// User + system CPU time of the process, all threads.
double cpu_now() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
         static_cast<double>(u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1e6;
}

// ---- the baselines: produce until the queue is full, then poll for reports

void on_report(rd_kafka_t*, const rd_kafka_message_t* m, void* opaque) {
  if (!m->err) ++*static_cast<std::size_t*>(opaque);
}

// producev: rd_kafka_producev() rather than rd_kafka_produce().
result bare(std::size_t n, const std::string& payload, bool producev) {
  char errstr[512];
  rd_kafka_conf_t* conf = rd_kafka_conf_new();
  for (const auto& [k, v] : config) rd_kafka_conf_set(conf, k.c_str(), v.c_str(), errstr, sizeof errstr);
  std::size_t delivered = 0;
  rd_kafka_conf_set_opaque(conf, &delivered);
  rd_kafka_conf_set_dr_msg_cb(conf, on_report);
  rd_kafka_t* rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, errstr, sizeof errstr);
  if (!rk) {
    std::fprintf(stderr, "kafka_bench: %s\n", errstr);
    std::exit(1);
  }
  rd_kafka_topic_t* rkt = rd_kafka_topic_new(rk, "bench", nullptr);
  auto produce = [&]() -> rd_kafka_resp_err_t {
    if (producev)
      return rd_kafka_producev(rk, RD_KAFKA_V_RKT(rkt), RD_KAFKA_V_PARTITION(RD_KAFKA_PARTITION_UA),
                               RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY),
                               RD_KAFKA_V_VALUE(const_cast<char*>(payload.data()), payload.size()), RD_KAFKA_V_END);
    return rd_kafka_produce(rkt, RD_KAFKA_PARTITION_UA, RD_KAFKA_MSG_F_COPY, const_cast<char*>(payload.data()),
                            payload.size(), nullptr, 0, nullptr) == 0
               ? RD_KAFKA_RESP_ERR_NO_ERROR
               : rd_kafka_last_error();
  };
  produce();
  rd_kafka_flush(rk, 10000);  // warm-up: connections, metadata
  delivered = 0;

  const double c0 = cpu_now();
  const auto t0 = clock_type::now();
  for (std::size_t i = 0; i < n; ++i) {
    while (produce() == RD_KAFKA_RESP_ERR__QUEUE_FULL) rd_kafka_poll(rk, 1000);
  }
  rd_kafka_flush(rk, 60000);
  const double s = std::chrono::duration<double>(clock_type::now() - t0).count();
  const double c = cpu_now() - c0;
  rd_kafka_topic_destroy(rkt);
  rd_kafka_destroy(rk);
  return {s, delivered, c};
}

// ---- sluice: write() until it says stop, again at 'drain'; end()
//
// Through the kafka_writable's own write(), which hands a message to
// librdkafka itself while the stream is idle; or (generic) through a
// `writable&`, as a tool that holds any writable does: the stream's path,
// a request for every message.

template <class Stream>
result sink(std::size_t n, const std::string& payload) {
  sluice::loop& l = sluice::loop::current();
  auto made = sluice::make_kafka_writable({.topic = "bench", .config = config});
  Stream& out = *made;
  out.write(payload);
  l.run();  // warm-up: connections, metadata (the stream is idle again)
  std::size_t delivered = 0;
  std::size_t written = 0;
  auto pump = [&] {
    while (written < n) {
      ++written;
      if (!out.write(payload, [&delivered](std::error_code ec) { delivered += !ec; })) return;
    }
    out.end();
  };
  out.on(sluice::event::drain, pump);

  const double c0 = cpu_now();
  const auto t0 = clock_type::now();
  pump();
  l.run();
  const double s = std::chrono::duration<double>(clock_type::now() - t0).count();
  return {s, delivered, cpu_now() - c0};
}

// ---- the kafka_sink alone, under a host of the bench's own (no stream):
// what the sink costs apart from the writable above it. The same pattern:
// write until a write stays in flight (librdkafka's queue is full), again
// when it completes; each write's callback taken by the sink, as the
// writable's are.

class sink_driver final : public sluice::sink_host {
 public:
  sink_driver(sluice::sink& s, std::size_t n, const std::string& payload, std::size_t& delivered)
      : sink_(s), n_(n), payload_(payload), delivered_(delivered) {
    host(s);
  }

  void pump() {
    while (written_ < n_) {
      ++written_;
      cb_ = [this](std::error_code ec) { delivered_ += !ec; };
      writing_ = true;
      sync_ = true;
      sink_.write(payload_, sluice::write_done(*this));
      sync_ = false;
      if (writing_) return;  // on_write() goes on
    }
    if (!ending_) {
      ending_ = true;
      sink_.final(sluice::final_done(*this));
    }
  }

  void on_write(std::error_code ec, std::size_t) noexcept override {
    if (ec) failed_ = true;
    writing_ = false;
    if (!sync_) pump();
  }
  void on_finish(std::error_code ec) noexcept override { failed_ = failed_ || ec; }
  sluice::write_cb take_write_cb() noexcept override { return std::move(cb_); }
  void on_sink_error(std::error_code) noexcept override { failed_ = true; }
  bool failed() const noexcept { return failed_; }

 private:
  sluice::sink& sink_;
  std::size_t n_;
  const std::string& payload_;
  std::size_t& delivered_;
  std::size_t written_ = 0;
  sluice::write_cb cb_;
  bool writing_ = false;
  bool sync_ = false;
  bool ending_ = false;
  bool failed_ = false;
};

result sink_alone(std::size_t n, const std::string& payload) {
  sluice::loop& l = sluice::loop::current();
  const auto sink = sluice::kafka_sink::open({.topic = "bench", .config = config});
  sluice::kafka_sink& out = *sink;
  out.attach(l);
  std::size_t delivered = 0;
  {
    sink_driver warm(out, 1, payload, delivered);  // warm-up: connections, metadata
    warm.pump();
    l.run();
  }
  delivered = 0;
  sink_driver driver(out, n, payload, delivered);
  const double c0 = cpu_now();
  const auto t0 = clock_type::now();
  driver.pump();
  l.run();
  const double s = std::chrono::duration<double>(clock_type::now() - t0).count();
  if (driver.failed()) delivered = 0;
  return {s, delivered, cpu_now() - c0};
}

}  // namespace

int main(int argc, char** argv) {
  const bool quick = std::getenv("SLUICE_BENCH_QUICK") != nullptr;
  std::size_t n = quick ? 200000 : 1000000;
  int runs = quick ? 2 : 5;
  std::size_t size = 100;
  std::string only;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (std::strcmp(argv[i], "--messages") == 0) n = std::strtoull(argv[i + 1], nullptr, 10);
    else if (std::strcmp(argv[i], "--runs") == 0) runs = std::atoi(argv[i + 1]);
    else if (std::strcmp(argv[i], "--size") == 0) size = std::strtoull(argv[i + 1], nullptr, 10);
    else if (std::strcmp(argv[i], "--only") == 0) only = argv[i + 1];
    else if (std::strcmp(argv[i], "--set") == 0) {
      const std::string kv = argv[i + 1];
      const auto eq = kv.find('=');
      config.emplace_back(kv.substr(0, eq), eq == std::string::npos ? "" : kv.substr(eq + 1));
    }
  }
  const std::string payload(size, 'x');

  struct side {
    const char* name;
    double best = 1e300;
    double cpu = 1e300;
    bool on;
  };
  side sides[] = {{"bare produce", 1e300, 1e300, only.empty() || only == "bare"},
                  {"bare producev", 1e300, 1e300, only.empty() || only == "producev"},
                  {"sluice writable", 1e300, 1e300, only.empty() || only == "sluice"},
                  {"kafka_sink alone", 1e300, 1e300, only.empty() || only == "sink"},
                  {"writable& (generic)", 1e300, 1e300, only.empty() || only == "generic"}};
  for (int r = 0; r < runs; ++r) {
    // Alternated, so that a busy moment of the machine hits every side.
    std::printf("run %d:", r + 1);
    for (int i = 0; i < 5; ++i) {
      side& sd = sides[i];
      if (!sd.on) continue;
      const result x = i == 4   ? sink<sluice::writable>(n, payload)
                       : i == 3 ? sink_alone(n, payload)
                       : i == 2 ? sink<sluice::kafka_writable>(n, payload)
                                : bare(n, payload, i == 1);
      if (x.delivered != n) {
        std::fprintf(stderr, "kafka_bench: %s delivered %zu of %zu\n", sd.name, x.delivered, n);
        return 1;
      }
      std::printf("  %s %.0f msg/s %.2f us CPU/msg", sd.name, n / x.seconds, x.cpu_seconds * 1e6 / n);
      sd.best = std::min(sd.best, x.seconds);
      sd.cpu = std::min(sd.cpu, x.cpu_seconds);
    }
    std::printf("\n");
  }
  if (!only.empty()) return 0;
  // Each sluice side against each bare loop. CPU per message (process-wide,
  // the mock brokers included) depends less on what else the machine runs
  // than wall time does.
  for (int j = 2; j < 5; ++j) {
    const side& k = sides[j];
    for (int i = 0; i < 2; ++i) {
      const side& b = sides[i];
      std::printf("kafka %zu x %zu B, best of %d: %s %.0f msg/s, %s %.0f msg/s, ratio %.2fx; CPU %.2f us, %.2f us a message, ratio %.2fx\n",
                  n, size, runs, b.name, n / b.best, k.name, n / k.best, b.best / k.best, b.cpu * 1e6 / n,
                  k.cpu * 1e6 / n, b.cpu / k.cpu);
    }
  }
  return 0;
}
