// A librdkafka mock cluster that outlives the programs under test, and a
// consumer that reads a topic back, for the shell tests of Kafka as a next
// hop (relay_kafka_test.sh). Real brokers' protocol on loopback, from
// librdkafka itself (rdkafka_mock.h); no Kafka installation needed.
//
//   kafka_mock cluster BROKERS TOPIC PARTITIONS
//     prints the bootstrap servers (one line), then takes commands on
//     standard input until its end: "down" and "up" (every broker),
//     "errors CODE COUNT" (the next COUNT Produce requests answered CODE).
//   kafka_mock consume BOOTSTRAP TOPIC PARTITIONS N SECONDS
//     prints "PARTITION<TAB>KEY<TAB>VALUE" for each message from the start of
//     every partition; stops when no message came for SECONDS, or 1 s
//     after the Nth (so that a duplicate still shows). Exit 0 when exactly
//     N were read, 1 otherwise.
#include <librdkafka/rdkafka.h>
#include <librdkafka/rdkafka_mock.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <sstream>
#include <string>

namespace {

int cluster(int brokers, const char* topic, int partitions) {
  char errstr[512];
  rd_kafka_conf_t* conf = rd_kafka_conf_new();
  rd_kafka_conf_set(conf, "log_level", "3", errstr, sizeof errstr);
  rd_kafka_t* rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, errstr, sizeof errstr);
  if (!rk) {
    std::fprintf(stderr, "kafka_mock: %s\n", errstr);
    return 1;
  }
  rd_kafka_mock_cluster_t* mc = rd_kafka_mock_cluster_new(rk, brokers);
  if (!mc || rd_kafka_mock_topic_create(mc, topic, partitions, brokers < 3 ? brokers : 3)) {
    std::fprintf(stderr, "kafka_mock: cannot make the mock cluster\n");
    return 1;
  }
  std::printf("%s\n", rd_kafka_mock_cluster_bootstraps(mc));
  std::fflush(stdout);
  std::string line;
  while (std::getline(std::cin, line)) {
    std::istringstream in(line);
    std::string cmd;
    in >> cmd;
    if (cmd == "down" || cmd == "up") {
      for (int id = 1; id <= brokers; ++id)
        cmd == "down" ? rd_kafka_mock_broker_set_down(mc, id) : rd_kafka_mock_broker_set_up(mc, id);
    } else if (cmd == "errors") {
      int code = 0, count = 0;
      in >> code >> count;
      for (int i = 0; i < count; ++i)
        rd_kafka_mock_push_request_errors(mc, 0 /* Produce */, 1, static_cast<rd_kafka_resp_err_t>(code));
    }
    std::fprintf(stderr, "kafka_mock: %s done\n", line.c_str());
  }
  rd_kafka_mock_cluster_destroy(mc);
  rd_kafka_destroy(rk);
  return 0;
}

int consume(const char* bootstrap, const char* topic, int partitions, long n, int seconds) {
  char errstr[512];
  rd_kafka_conf_t* conf = rd_kafka_conf_new();
  rd_kafka_conf_set(conf, "bootstrap.servers", bootstrap, errstr, sizeof errstr);
  rd_kafka_conf_set(conf, "group.id", "kafka_mock", errstr, sizeof errstr);
  rd_kafka_conf_set(conf, "enable.auto.commit", "false", errstr, sizeof errstr);
  rd_kafka_t* rk = rd_kafka_new(RD_KAFKA_CONSUMER, conf, errstr, sizeof errstr);
  if (!rk) {
    std::fprintf(stderr, "kafka_mock: %s\n", errstr);
    return 1;
  }
  rd_kafka_topic_partition_list_t* parts = rd_kafka_topic_partition_list_new(partitions);
  for (int p = 0; p < partitions; ++p)
    rd_kafka_topic_partition_list_add(parts, topic, p)->offset = RD_KAFKA_OFFSET_BEGINNING;
  rd_kafka_assign(rk, parts);
  rd_kafka_topic_partition_list_destroy(parts);
  using clock = std::chrono::steady_clock;
  long got = 0;
  auto last = clock::now();
  auto window = std::chrono::seconds(seconds);
  while (clock::now() - last < window) {
    rd_kafka_message_t* m = rd_kafka_consumer_poll(rk, 100);
    if (!m) continue;
    if (!m->err) {
      ++got;
      last = clock::now();
      std::printf("%d\t%.*s\t%.*s\n", m->partition, static_cast<int>(m->key_len), static_cast<const char*>(m->key),
                  static_cast<int>(m->len), static_cast<const char*>(m->payload));
      if (got == n) window = std::chrono::seconds(1);
    }
    rd_kafka_message_destroy(m);
  }
  std::fflush(stdout);
  rd_kafka_consumer_close(rk);
  rd_kafka_destroy(rk);
  return got == n ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "";
  if (mode == "cluster" && argc == 5) return cluster(std::atoi(argv[2]), argv[3], std::atoi(argv[4]));
  if (mode == "consume" && argc == 7)
    return consume(argv[2], argv[3], std::atoi(argv[4]), std::atol(argv[5]), std::atoi(argv[6]));
  std::fprintf(stderr,
               "usage: kafka_mock cluster BROKERS TOPIC PARTITIONS | consume BOOTSTRAP TOPIC PARTITIONS N SECONDS\n");
  return 2;
}
