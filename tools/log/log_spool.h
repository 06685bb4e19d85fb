// sluice-log's --spool DIR [--spool-max SIZE]: the network destination's
// writable put behind a spool_writable, so that lines go to segment files
// in DIR while the receiver is away or slow, are sent from there, and what
// a run could not send is sent first by the next run on the same DIR.
#pragma once

#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <string_view>
#include <system_error>

#include "sluice/sluice.h"
#include "stat_table.h"

namespace sluice_tools {

struct log_spool_settings {
  std::string dir;  // empty: no spool
  std::uint64_t max_bytes = std::uint64_t{1} << 30;
  // Each batch fsynced before its callbacks (spool_sync::batch): a relay
  // answers its senders from them, and an answer must survive the machine.
  bool sync = false;
  const char* tool = "sluice-log";  // the messages' prefix
};

// A Kafka delivery report's error that says the brokers were away or slow,
// not that they refused the message: sent again later, it would land. Such
// a record stays in the spool for the next run (the run ends with exit 1),
// where any other delivery error drops it as a refusal. sluice-log does not
// link librdkafka (its Kafka part is a module), so the codes are
// rd_kafka_resp_err_t's values, from librdkafka's rdkafka.h.
inline bool kafka_transient(std::error_code ec) {
  if (std::string_view(ec.category().name()) != "rdkafka") return false;
  switch (ec.value()) {
    case -195:  // _TRANSPORT
    case -192:  // _MSG_TIMED_OUT
    case -187:  // _ALL_BROKERS_DOWN
    case -185:  // _TIMED_OUT
    case -184:  // _QUEUE_FULL
    case -166:  // _TIMED_OUT_QUEUE
    case 5:     // LEADER_NOT_AVAILABLE
    case 6:     // NOT_LEADER_FOR_PARTITION
    case 7:     // REQUEST_TIMED_OUT
    case 8:     // BROKER_NOT_AVAILABLE
    case 13:    // NETWORK_EXCEPTION
    case 19:    // NOT_ENOUGH_REPLICAS
    case 20:    // NOT_ENOUGH_REPLICAS_AFTER_APPEND
      return true;
    default:
      return false;
  }
}

class log_spool {
 public:
  // Puts `down` behind a spool on settings.dir; null after saying why on
  // standard error (a DIR refused).
  // `kafka`: `down` is a Kafka writable, whose failed deliveries are
  // refusals only when the broker said no (see kafka_transient()).
  std::unique_ptr<sluice::writable> wrap(std::unique_ptr<sluice::writable> down, const log_spool_settings& s,
                                         const std::string& name, bool kafka = false) {
    sluice::spool_options o;
    o.dir = s.dir;
    o.max_bytes = s.max_bytes;
    if (s.sync) o.sync = sluice::spool_sync::batch;
    tool_ = s.tool;
    o.on_spool_error = [tool = s.tool, dir = s.dir, name](std::error_code ec) {
      std::fprintf(stderr,
                   "%s: %s: --spool %s cannot be written (%s): lines wait in memory, the input held back, "
                   "until it can\n",
                   tool, name.c_str(), dir.c_str(), ec.message().c_str());
    };
    // A refused line is dropped from the spool, as without it a refused line
    // fails alone: said once here, counted in --stats, and the run exits 1.
    o.on_refused = [this, name](std::error_code ec) {
      if (said_refusal_) return;
      said_refusal_ = true;
      std::fprintf(stderr, "%s: %s: %s: dropped from the spool, not sent again\n", tool_, name.c_str(),
                   ec.message().c_str());
    };
    if (kafka) o.is_refusal = [](std::error_code ec) { return !kafka_transient(ec); };
    std::error_code ec;
    auto w = sluice::make_spool_writable(std::move(down), o, ec);
    if (!w) {
      std::fprintf(stderr, "%s: --spool %s: %s\n", tool_, s.dir.c_str(), ec.message().c_str());
      return nullptr;
    }
    spool_ = w.get();
    return w;
  }

  explicit operator bool() const noexcept { return spool_ != nullptr; }

  // This run's lines, as the spool settled them: `taken` of the run's lines
  // had a callback that said success (in the spool, or, while it could not
  // be written, delivered from memory). Of those in the spool: acknowledged,
  // refused (dropped), or left for the next run; the rest of `taken` went
  // from memory and were acknowledged.
  struct own_counts {
    std::uint64_t acked = 0;    // acknowledged, from the spool or from memory
    std::uint64_t refused = 0;  // refused by the receiver, dropped from the spool
    std::uint64_t left = 0;     // in the spool, for the next run
  };
  own_counts own(std::uint64_t taken) const {
    own_counts c;
    if (!spool_) return c;
    const std::uint64_t spooled = spool_->spooled_records();
    c.refused = spool_->refused() - spool_->refused_earlier();
    c.acked = spool_->acked() - spool_->acked_earlier() + (taken > spooled ? taken - spooled : 0);
    c.left = left();
    return c;
  }
  sluice::spool_writable* get() const noexcept { return spool_; }

  // Said once, at the end, when the spool still holds lines: the next run
  // on DIR sends them.
  // `why`: what stopped the sending, if anything did.
  void report(const std::string& dir, const std::string& why) const {
    if (spool_ && spool_->segments() != 0)
      std::fprintf(stderr, "%s: --spool %s: %llu bytes left in the spool, for the next run%s%s%s\n", tool_,
                   dir.c_str(), static_cast<unsigned long long>(spool_->disk_bytes()), why.empty() ? "" : " (",
                   why.c_str(), why.empty() ? "" : ")");
  }

  // The spool's part of --stats and --metrics, after the destination's.
  void add_stats(stat_table& t) const {
    if (!spool_) return;
    using enum metric_type;
    t.insert(t.end(), {
        {"spooled", ", # spooled", "sluice_log_spooled_total", "Lines of this run put in the spool.", counter,
         spool_->spooled_records()},
        {"spooled_bytes", " (# bytes)", "sluice_log_spooled_bytes_total", "Their bytes.", counter,
         spool_->spooled_bytes()},
        {"sent_from_spool", ", # sent from spool", "sluice_log_sent_from_spool_total",
         "Records sent from the spool (again after a reconnect too).", counter, spool_->sent_from_spool()},
        {"acked_from_spool", ", # acked", "sluice_log_spool_acked_total",
         "Records acknowledged downstream and so done in the spool (earlier runs' too).", counter, spool_->acked()},
        {"refused_from_spool", ", # refused", "sluice_log_spool_refused_total",
         "Records the receiver refused, dropped from the spool (earlier runs' too).", counter, spool_->refused()},
        {"left_in_spool", ", # left in spool", "sluice_log_spool_left",
         "This run's records in the spool, neither acknowledged nor refused, now.", gauge, left()},
        {"earlier_acked", ", # acked", "sluice_log_spool_earlier_acked_total",
         "Records of earlier runs acknowledged.", counter, spool_->acked_earlier()},
        {"earlier_refused", " and # refused of earlier runs", "sluice_log_spool_earlier_refused_total",
         "Records of earlier runs refused.", counter, spool_->refused_earlier()},
        {"segments", ", # segments left", "sluice_log_spool_segments", "Segment files in the spool now.", gauge,
         spool_->segments()},
        {"recovered_segments", ", # recovered", "sluice_log_spool_recovered_segments_total",
         "Segments of earlier runs found at the start.", counter, spool_->recovered_segments()},
        {"torn_bytes", ", # torn bytes", "sluice_log_spool_torn_bytes_total",
         "Bytes of records that were not whole and intact, never sent.", counter, spool_->torn_bytes()},
        {"spool_failures", ", # spool failures", "sluice_log_spool_failures_total",
         "Times the spool could not be written (ENOSPC, EIO).", counter, spool_->spool_failures()},
        {nullptr, nullptr, "sluice_log_spool_bytes", "Bytes of the spool's segment files now.", gauge,
         spool_->disk_bytes()},
    });
  }

 private:
  // This run's records in the spool, neither acknowledged nor refused.
  std::uint64_t left() const noexcept {
    return spool_->spooled_records() - (spool_->acked() - spool_->acked_earlier()) -
           (spool_->refused() - spool_->refused_earlier());
  }

  sluice::spool_writable* spool_ = nullptr;
  const char* tool_ = "sluice-log";
  bool said_refusal_ = false;
};

}  // namespace sluice_tools
