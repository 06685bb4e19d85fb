// sluice-log's network destinations: syslog://, syslog+unix: and
// syslog+tls:// (a syslog_writable that connects at once and reconnects on
// its own; over TLS, a certificate refused ends it),
// relp:// (a relp_writable: a line counts once the receiver acknowledged
// it), and kafka:// (a module loaded only then, log_kafka.h).
#pragma once

#include <unistd.h>

#include <cstdio>
#include <memory>
#include <string>
#include <system_error>
#include <utility>
#include <vector>

#include "load_module.h"
#include "log_dest.h"
#include "log_output.h"
#include "log_spool.h"
#include "sluice/sluice.h"
#include "sluice/syslog/relp_writable.h"
#include "tool.h"
#if SLUICE_LOG_KAFKA
#include "log_kafka.h"
#endif

namespace sluice_tools {

class log_net_output final : public log_output {
 public:
  using kafka_config = std::vector<std::pair<std::string, std::string>>;

  // `name`: DEST as given, for messages; `max_message` for the note on a
  // line cut to it. A Kafka module that cannot load, or a property
  // librdkafka refuses, is bad usage (`tool`).
  log_net_output(const tool& tool, const log_destination& dest, const std::string& name,
                 const sluice::syslog_options& syslog, const sluice::relp_options& relp, const kafka_config& kafka,
                 std::size_t max_message, const log_spool_settings& spool = {})
      : tool_(tool), dest_(dest), name_(name), syslog_options_(syslog), relp_options_(relp), kafka_(kafka),
        max_message_(max_message), spool_settings_(spool) {}

  // A receiver that is away is not an error (unless --give-up-after).
  // With --spool, the destination's writable sits behind the spool.
  bool open() override {
    if (!open_destination()) return false;
    if (spool_settings_.dir.empty()) return true;
    out_ = spool_.wrap(std::move(out_), spool_settings_, name_, dest_.type == log_destination::kind::kafka);
    return out_ != nullptr;
  }

  bool open_destination() {
    if (dest_.type == log_destination::kind::relp_tcp || dest_.type == log_destination::kind::relp_tls) {
      sluice::relp_options ro = relp_options_;
      if (ro.fatal_error) ro.fatal_error = say_fatal(ro.fatal_error);
      auto w = sluice::make_relp_writable(ro);
      relp_ = w.get();
      out_ = std::move(w);
      return true;
    }
    if (dest_.type != log_destination::kind::kafka) {
      sluice::syslog_options so = syslog_options_;
      so.on_connection_lost = [this](std::error_code ec, std::size_t n) {
        // A reset is the kernel's word; anything else (a TLS alert, a
        // timeout) is the receiver breaking off, said with its reason.
        const bool reset = ec == std::errc::connection_reset || ec == std::errc::broken_pipe;
        const std::string how = !ec ? "closed the connection"
                                    : (reset ? "reset the connection (" : "broke off the connection (") + ec.message() + ")";
        std::fprintf(stderr, "sluice-log: %s: the receiver %s with up to %zu messages in flight: they may be lost\n",
                     name_.c_str(), how.c_str(), n);
      };
      if (so.fatal_error) so.fatal_error = say_fatal(so.fatal_error);
      auto w = sluice::make_syslog_writable(so);
      syslog_ = w.get();
      out_ = std::move(w);
      return true;
    }
#if SLUICE_LOG_KAFKA
    std::string why;
    const sluice_log_make_kafka_fn make = load_kafka_module(why);
    if (!make) tool_.usage_error(name_ + ": cannot load sluice-log's Kafka module: " + why);
    sluice::kafka_options k{.topic = dest_.topic, .config = {{"bootstrap.servers", dest_.brokers}}};
    k.config.insert(k.config.end(), kafka_.begin(), kafka_.end());
    out_.reset(make(&k, &why));
    // librdkafka refuses a property or a value: the command line is wrong.
    if (!out_) tool_.usage_error(name_ + ": " + why);
    return true;
#else
    return false;  // parse_args() refused kafka://
#endif
  }

  bool network() const noexcept override { return true; }

  // A certificate refused (syslog+tls://, relp+tls://): said once, with
  // OpenSSL's reason; the stream then ends with it, and report() counts the
  // rest.
  std::function<bool(std::error_code)> say_fatal(std::function<bool(std::error_code)> fatal) {
    return [this, fatal = std::move(fatal)](std::error_code ec) {
      if (!fatal(ec)) return false;
      const std::string code = sluice::code_name(ec);
      const bool theirs = code.rfind("ERR_SSL_", 0) == 0;  // the receiver's alert
      std::fprintf(stderr, "sluice-log: %s: TLS: %s: %s (%s); not trying again\n", name_.c_str(),
                   theirs ? "the receiver refused this client's certificate" : "certificate verify failed",
                   ec.message().c_str(), code.c_str());
      return true;
    };
  }

  void landed() override {
    const std::size_t cut = syslog_ ? syslog_->truncated() : relp_ ? relp_->truncated() : 0;
    if (!noted_truncation_ && cut != 0) {
      noted_truncation_ = true;
      std::fprintf(stderr, "sluice-log: %s: a line longer than --max-message %zu bytes (header included) was sent "
                   "truncated; --stats counts them\n", name_.c_str(), max_message_);
    }
  }

  // "D of N messages not sent" unless all were, and what the receiver may
  // have lost.
  bool report(const log_counts& n, const log_end& end) override {
    spool_.report(spool_settings_.dir, end.reason);
    bool ok = end.ok_so_far;
    if (syslog_ && syslog_->maybe_lost() != 0) {
      std::fprintf(stderr,
                   "sluice-log: %s: up to %zu of the %zu messages sent may be lost: the receiver broke %zu "
                   "connection%s with messages in flight\n",
                   name_.c_str(), syslog_->maybe_lost(), n.written, syslog_->connections_lost(),
                   syslog_->connections_lost() == 1 ? "" : "s");
      // The stream's own error is that break: said above.
      if (n.unsent == 0) return false;
      ok = false;
    }
    if (n.written + n.unsent != n.lines) {
      // Nothing left to do and a callback never came: a bug, not a state to hide.
      std::fprintf(stderr, "sluice-log: %s: %zu of %zu messages never reported\n", name_.c_str(),
                   n.lines - n.written - n.unsent, n.lines);
      ok = false;
    }
    if (relp_ && relp_->refused() != 0) {
      // A refusal fails its message only: the stream went on.
      std::fprintf(stderr, "sluice-log: %s: the receiver refused %zu message%s (answered other than 200)\n",
                   name_.c_str(), relp_->refused(), relp_->refused() == 1 ? "" : "s");
      ok = false;
    }
    if (n.unsent != 0) {
      std::fprintf(stderr, "sluice-log: %s: %zu of %zu messages not %s: %s\n", name_.c_str(), n.unsent, n.lines,
                   relp_ ? "acknowledged" : "sent",
                   !end.reason.empty() ? end.reason.c_str() : relp_ && relp_->refused() == n.unsent ? "refused" : "unknown");
      ok = false;
    } else if (!end.finished && ok) {
      std::fprintf(stderr, "sluice-log: %s: %s\n", name_.c_str(),
                   end.reason.empty() ? "the stream did not finish" : end.reason.c_str());
      ok = false;
    }
    return ok;
  }

  stat_table stats(const log_counts& n) const override {
    using enum metric_type;
    stat_table t = {{"lines", "# lines", "sluice_log_lines_read_total",
                     "Lines read (from standard input, or the --follow files).", counter, n.lines}};
    if (relp_) {
      std::size_t acked = relp_->acked(), dropped = n.unsent, refused = relp_->refused();
      if (spool_) {
        // The spool sends earlier runs' lines too, and takes this run's
        // before the receiver has them: the counts are this run's lines,
        // N = A + D + the spool's 'left in spool' (see --help).
        const log_spool::own_counts c = spool_.own(n.written);
        acked = c.acked;
        dropped += c.refused;
        refused -= spool_.get()->refused_earlier();
      }
      t.insert(t.end(), {
          {"acked", ", # acked", "sluice_log_messages_acked_total",
           "This run's lines the RELP receiver acknowledged (rsp 200).", counter, acked},
          {"resent", ", # resent", "sluice_log_messages_resent_total",
           "Lines sent again on a new RELP session (the receiver may have them twice).", counter, relp_->resent()},
          {"dropped", ", # dropped", "sluice_log_messages_dropped_total",
           "This run's lines not acknowledged: given up, or refused.", counter, dropped},
          {"reconnects", ", # reconnects", "sluice_log_reconnects_total", "Sessions opened after the first.", counter,
           relp_->reconnects()},
          {"refused", ", # refused", "sluice_log_messages_refused_total",
           "This run's lines the receiver refused (answered other than 200).", counter, refused},
          {"truncated", ", # truncated", "sluice_log_messages_truncated_total",
           "Lines sent cut to --max-message.", counter, relp_->truncated()},
      });
    } else if (syslog_) {
      t.insert(t.end(), {
          {"sent", ", # sent", "sluice_log_messages_sent_total",
           "Lines sent (in the kernel's socket buffer, or in the spool).", counter, n.written},
          {"dropped", ", # dropped", "sluice_log_messages_dropped_total", "Lines given up, never sent.", counter,
           n.unsent},
          {"reconnects", ", # reconnects", "sluice_log_reconnects_total", "Connections after the first.", counter,
           syslog_->reconnects()},
          {"maybe_lost", ", # maybe lost", "sluice_log_messages_maybe_lost_total",
           "Lines sent on connections the receiver broke while they were in flight.", counter,
           syslog_->maybe_lost()},
          {"truncated", ", # truncated", "sluice_log_messages_truncated_total",
           "Lines sent cut to --max-message.", counter, syslog_->truncated()},
      });
    } else {
      t.insert(t.end(), {
          {"delivered", ", # delivered", "sluice_log_messages_delivered_total",
           "Lines the Kafka brokers acknowledged (or in the spool).", counter, n.written},
          {"failed", ", # failed", "sluice_log_messages_failed_total", "Lines whose delivery failed.", counter,
           n.unsent},
      });
    }
    spool_.add_stats(t);
    return t;
  }

 private:
#if SLUICE_LOG_KAFKA
  // The Kafka module (log_kafka.h): beside sluice-log in the build tree,
  // else where it is installed (SLUICE_LOG_KAFKA_MODULE, from $ORIGIN,
  // sluice-log's directory, as its RUNPATH). It stays loaded to the exit.
  static sluice_log_make_kafka_fn load_kafka_module(std::string& why) {
    return reinterpret_cast<sluice_log_make_kafka_fn>(
        load_module_symbol("sluice-log-kafka.so", SLUICE_LOG_KAFKA_MODULE, "sluice_log_make_kafka", why));
  }
#endif

  [[maybe_unused]] const tool& tool_;  // for kafka:// only
  const log_destination& dest_;
  const std::string& name_;
  const sluice::syslog_options& syslog_options_;
  const sluice::relp_options& relp_options_;
  [[maybe_unused]] const kafka_config& kafka_;  // for kafka:// only
  std::size_t max_message_;
  log_spool_settings spool_settings_;
  log_spool spool_;                            // with --spool
  sluice::syslog_writable* syslog_ = nullptr;  // out_ (or behind the spool), for syslog://
  sluice::relp_writable* relp_ = nullptr;      // out_ (or behind the spool), for relp://
  bool noted_truncation_ = false;  // the first line cut to --max-message was noted
};

}  // namespace sluice_tools
