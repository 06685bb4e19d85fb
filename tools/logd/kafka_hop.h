// sluice-logd's relay with Kafka as the next hop (--forward
// kafka://BROKERS/TOPIC): each message goes to the topic as it came, keyed
// by the sender's host (kafka_key()), through sluice-log's Kafka module
// (log/log_kafka.h, loaded only for a kafka:// hop, so that a relay or
// receiver without Kafka never maps librdkafka). A message's write callback,
// which answers its RELP sender, is its delivery report; the reports of
// different partitions come in any order, and the callbacks are given back
// in the order of the writes, as the relay's answers go in order.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>
#include <utility>
#include <vector>

#include "log/log_dest.h"
#include "sluice/stream/writable.h"
#include "rate_limited_note.h"
#include "stat_table.h"

namespace sluice_tools {

// The key of a message: the HOSTNAME field of its syslog header (RFC 5424:
// "<PRI>1 TIMESTAMP HOSTNAME ..."; RFC 3164: "<PRI>Mmm dd hh:mm:ss HOSTNAME
// ..."), or, when it has none ("-", or no header of either form), the
// sender's address without its port (`peer`, "ADDRESS:PORT" or
// "unix:PATH"). So one host's messages go to one partition, in order.
std::string_view kafka_key(std::string_view msg, std::string_view peer) noexcept;

class kafka_hop {
 public:
  // The producer for `dest`: acks=all and enable.idempotence=true, then
  // the -X settings in order; "message.timeout.ms" is `give_up_after` (0,
  // no deadline, without it). Null with `why` (the module does not load, or
  // librdkafka refuses a setting).
  std::unique_ptr<sluice::writable> open(const log_destination& dest,
                                         const std::vector<std::pair<std::string, std::string>>& config,
                                         std::optional<std::chrono::milliseconds> give_up_after, std::string& why);
  // One message, keyed by kafka_key(); `cb` comes in the order of the
  // writes. Returns write()'s result (false: hold the senders back).
  bool write(std::string_view msg, std::string_view peer, sluice::write_cb cb);
  // Whether a callback's error says the broker refused that message (too
  // large, invalid: kafka_options::refusals_fail_alone): the relay answers
  // it with an error, and the rest goes on.
  bool refused(std::error_code ec) const noexcept;
  void add_stats(stat_table& t) const;

 private:
  // The callbacks not yet given back, in the order of the writes.
  struct in_order {
    struct entry {
      sluice::write_cb cb;
      std::error_code ec;
      bool settled = false;
    };
    std::deque<entry> waiting;
    std::uint64_t first = 0;  // the number of waiting.front()
    std::size_t forwarded = 0, refused = 0;
    bool releasing = false;
    void* refused_fn = nullptr;  // sluice_log_kafka_refused_fn
    std::string name;            // "next hop kafka://BROKERS/TOPIC", for the note
    rate_limited_note refused_note;
    void settle(std::uint64_t n, std::error_code ec) noexcept;
    bool refused_by_broker(std::error_code ec) const noexcept;
  };

  sluice::writable* out_ = nullptr;
  void* produce_ = nullptr;  // sluice_log_kafka_produce_fn
  // Its callbacks point here: logd destroys the writable first (out_ is
  // declared before relay_), and the writable settles every callback.
  std::unique_ptr<in_order> order_ = std::make_unique<in_order>();
};

}  // namespace sluice_tools
