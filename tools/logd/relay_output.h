// sluice-logd's relay (--forward): instead of a FILE, each message goes on
// to the next hop over RELP, as it was received, and its write's callback
// (which answers a RELP sender) comes only once that hop answered it. So an
// answer means what the last hop's answer means, however many relays are
// in between. The options here are sluice-log's where it has them
// (--window, --give-up-after).
#pragma once

#include <chrono>
#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>
#include <utility>
#include <vector>

#include "log/log_dest.h"
#include "logd/kafka_hop.h"
#include "log/log_spool.h"
#include "rate_limited_note.h"
#include "sluice/syslog/relp_writable.h"
#include "tool.h"

namespace sluice_tools {

// What --forward and the options that go with it say.
struct relay_settings {
  std::vector<std::string> forward;  // each --forward as given
  std::vector<log_destination> hops;  // parsed, the first tried first
  std::optional<std::size_t> window;  // --window
  std::optional<std::chrono::milliseconds> give_up_after;  // --give-up-after
  std::string tls_ca, tls_name;  // --forward-tls-ca, --forward-tls-name
  std::string tls_cert, tls_key;  // --forward-tls-cert, --forward-tls-key: this relay's certificate
  log_spool_settings spool{.dir = {}, .sync = true, .tool = "sluice-logd"};  // --spool DIR, --spool-max SIZE
  bool spool_max_given = false;
  std::vector<std::pair<std::string, std::string>> kafka_config;  // -X KEY=VALUE, in order
  bool enabled() const noexcept { return !forward.empty(); }
  bool kafka() const noexcept { return !hops.empty() && hops.front().type == log_destination::kind::kafka; }
};

// One --forward URL (relp://HOST:PORT, relp+tls://HOST:PORT or
// kafka://BROKERS/TOPIC); bad usage otherwise.
void add_forward(const tool& t, relay_settings& r, const std::string& url);
// -X KEY=VALUE: a librdkafka setting for a kafka:// next hop.
void add_forward_kafka_setting(const tool& t, relay_settings& r, const std::string& arg);
// --window N: 1 to 1000000.
void set_forward_window(const tool& t, relay_settings& r, const std::string& arg);
// --give-up-after T: a time above 0.
void set_forward_give_up(const tool& t, relay_settings& r, const std::string& arg);
// --spool-max SIZE: K, M or G, at least 64K.
void set_forward_spool_max(const tool& t, relay_settings& r, const std::string& arg);
// After every option: the relay's options without --forward, or --forward
// with a FILE or FILE's options (`file_option`: the first given, or null),
// are bad usage; so are --forward URLs of both schemes.
void check_relay_args(const tool& t, const relay_settings& r, bool has_file, const char* file_option);

// The name messages give the output: "next hop relp://HOST:PORT", or
// "next hops URL, URL".
std::string relay_name(const relay_settings& r);

// The RELP writable to the next hops, and its counters for --stats.
class relay_output {
 public:
  explicit relay_output(const relay_settings& s) : s_(s) {}

  // The writable, connecting now; null with `why` (a --forward-tls-* file
  // that cannot be loaded, a Kafka setting librdkafka refuses).
  std::unique_ptr<sluice::writable> open(std::size_t max_message, std::string& why);
  // One message from `peer` to the next hop (the writable open() made).
  bool write(sluice::writable& out, std::string_view msg, std::string_view peer, sluice::write_cb cb) {
    if (s_.kafka()) return kafka_.write(msg, peer, std::move(cb));
    return out.write(msg, std::move(cb));
  }
  // Whether a write's error says the next hop refused that message (a
  // RELP hop's rsp 500, a Kafka broker's too large or invalid): answered to
  // its sender with a RELP error, and the relay goes on. A RELP hop's
  // refusal is said here (rate-limited; the Kafka hop says its own where it
  // counts it), since the relay asks once for each failed write.
  bool refused(std::error_code ec);
  // What --stats and --metrics add to sluice-logd's table: "; F forwarded,
  // S resent, R reconnects, D refused by the next hop", and the spool's
  // counts (log_spool.h's rows, named sluice_log_spool_* as sluice-log's).
  void add_stats(stat_table& t) const;
  // With --spool: whether its records wait for the next hop, and a line
  // saying how much is left there for the next run (`why`: what ended it).
  bool spooling() const noexcept { return static_cast<bool>(spool_); }
  void report(const std::string& why) const { spool_.report(s_.spool.dir, why); }

 private:
  const relay_settings& s_;
  sluice::relp_writable* relp_ = nullptr;
  log_spool spool_;  // with --spool: in front of relp_
  kafka_hop kafka_;  // --forward kafka://
  rate_limited_note refused_note_;  // a RELP hop's refusals
};

}  // namespace sluice_tools
