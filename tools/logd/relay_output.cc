// sluice-logd's relay: see relay_output.h.
#include "logd/relay_output.h"

#include <cstdio>
#include <utility>

#include "args.h"
#include "tls_files.h"
#if SLUICE_TOOL_TLS
#include "sluice/syslog/syslog_tls.h"
#endif

namespace sluice_tools {

void add_forward(const tool& t, relay_settings& r, const std::string& url) {
  log_destination d;
  std::string why;
  if (!parse_log_destination(url, d, why)) t.usage_error("--forward: " + why);
  if (d.type != log_destination::kind::relp_tcp && d.type != log_destination::kind::relp_tls &&
      d.type != log_destination::kind::kafka)
    t.usage_error("--forward wants relp://HOST:PORT, relp+tls://HOST:PORT or kafka://BROKER[,BROKER...]/TOPIC, got '" +
                  url + "'");
#if !SLUICE_LOGD_KAFKA
  if (d.type == log_destination::kind::kafka)
    t.usage_error("--forward kafka://: this sluice-logd was built without Kafka (build it with librdkafka: "
                  "Debian's librdkafka-dev)");
#endif
#if !SLUICE_TOOL_TLS
  if (d.type == log_destination::kind::relp_tls)
    t.usage_error("--forward relp+tls://: this sluice-logd was built without TLS");
#endif
  r.forward.push_back(url);
  r.hops.push_back(d);
}

void add_forward_kafka_setting(const tool& t, relay_settings& r, const std::string& arg) {
  const std::size_t eq = arg.find('=');
  if (eq == std::string::npos || eq == 0)
    t.usage_error("-X wants KEY=VALUE (a librdkafka property), got '" + arg + "'");
  r.kafka_config.emplace_back(arg.substr(0, eq), arg.substr(eq + 1));
}

void set_forward_window(const tool& t, relay_settings& r, const std::string& arg) {
  std::uint64_t v = 0;
  if (!parse_size(arg.c_str(), false, 1'000'000, v) || v < 1)
    t.usage_error("--window wants a whole number of messages from 1 to 1000000, got '" + arg + "'");
  r.window = static_cast<std::size_t>(v);
}

void set_forward_give_up(const tool& t, relay_settings& r, const std::string& arg) {
  std::chrono::milliseconds v{};
  if (!parse_duration(arg, v) || v.count() == 0)
    t.usage_error("--give-up-after wants a time above 0, e.g. 30s, 500ms or 2m, got '" + arg + "'");
  r.give_up_after = v;
}

void set_forward_spool_max(const tool& t, relay_settings& r, const std::string& arg) {
  std::uint64_t v = 0;
  if (!parse_size(arg.c_str(), true, UINT64_MAX >> 1, v) || v < 64 * 1024)
    t.usage_error("--spool-max wants a number of bytes from 64K, with K, M or G or none, got '" + arg + "'");
  r.spool.max_bytes = v;
  r.spool_max_given = true;
}

void check_relay_args(const tool& t, const relay_settings& r, bool has_file, const char* file_option) {
  if (!r.enabled()) {
    const char* relay_option = r.window ? "--window" : r.give_up_after ? "--give-up-after"
                               : !r.tls_ca.empty() ? "--forward-tls-ca" : !r.tls_name.empty() ? "--forward-tls-name"
                               : !r.tls_cert.empty() ? "--forward-tls-cert" : !r.tls_key.empty() ? "--forward-tls-key"
                               : !r.spool.dir.empty() ? "--spool" : r.spool_max_given ? "--spool-max"
                               : !r.kafka_config.empty() ? "-X" : nullptr;
    if (relay_option) t.usage_error(std::string(relay_option) + " goes with --forward");
    return;
  }
  if (r.spool_max_given && r.spool.dir.empty()) t.usage_error("--spool-max goes with --spool DIR");
  if (has_file) t.usage_error("FILE and --forward exclude each other: a relay writes no FILE of its own");
  if (file_option) t.usage_error(std::string(file_option) + " is FILE's, and a relay (--forward) has no FILE");
  if (r.kafka()) {
    // One cluster takes every message; its brokers are BROKER,BROKER.
    if (r.hops.size() > 1) t.usage_error("--forward kafka:// goes alone (give the brokers as kafka://B1,B2/TOPIC)");
    const char* relp_only = r.window ? "--window" : !r.spool.dir.empty() ? "--spool" : r.spool_max_given ? "--spool-max"
                            : (!r.tls_ca.empty() || !r.tls_name.empty() || !r.tls_cert.empty() || !r.tls_key.empty())
                                ? "--forward-tls-*" : nullptr;
    if (relp_only)
      t.usage_error(std::string(relp_only) + " goes with --forward relp://, not kafka:// (use -X for librdkafka's "
                    "settings)");
    return;
  }
  if (!r.kafka_config.empty()) t.usage_error("-X goes with --forward kafka://");
  for (const log_destination& d : r.hops)
    if (d.type != r.hops.front().type)
      t.usage_error("--forward: two schemes together; give every next hop the same scheme");
  const bool tls = r.hops.front().type == log_destination::kind::relp_tls;
  if (!tls && (!r.tls_ca.empty() || !r.tls_name.empty() || !r.tls_cert.empty() || !r.tls_key.empty()))
    t.usage_error("the --forward-tls-* options go with --forward relp+tls://");
  // tls::use_tls() checks every connection's certificate against one name:
  // hops on other hosts need it given.
  if (tls && r.tls_name.empty())
    for (const log_destination& d : r.hops)
      if (d.host != r.hops.front().host)
        t.usage_error("--forward relp+tls:// to more than one host: give --forward-tls-name, the name every next "
                      "hop's certificate carries");
  if (r.tls_cert.empty() != r.tls_key.empty())
    t.usage_error("--forward-tls-cert and --forward-tls-key go together");
  // A file that is not there or cannot be read is bad usage, as the other
  // --tls-* files of the tools are; one OpenSSL cannot load is said by open().
  for (auto [opt, path] : {std::pair{"--forward-tls-ca", &r.tls_ca}, {"--forward-tls-cert", &r.tls_cert},
                           {"--forward-tls-key", &r.tls_key}})
    if (!path->empty())
      if (const std::string why = tls_file_problem(opt, *path); !why.empty()) t.usage_error(why);
  if (!r.tls_key.empty()) warn_if_key_shared("sluice-logd", "--forward-tls-key", r.tls_key);
}

std::string relay_name(const relay_settings& r) {
  std::string name = r.forward.size() == 1 ? "next hop " : "next hops ";
  for (std::size_t i = 0; i < r.forward.size(); ++i) name += (i ? ", " : "") + r.forward[i];
  return name;
}

std::unique_ptr<sluice::writable> relay_output::open(std::size_t max_message, std::string& why) {
  if (s_.kafka()) return kafka_.open(s_.hops.front(), s_.kafka_config, s_.give_up_after, why);
  sluice::relp_options o;
  o.host = s_.hops.front().host;
  o.port = s_.hops.front().port;
  for (std::size_t i = 1; i < s_.hops.size(); ++i) o.alternates.emplace_back(s_.hops[i].host, s_.hops[i].port);
  // The message goes on as it came, and no longer than this relay took it.
  o.as_is = true;
  o.max_message = max_message;
  if (s_.window) o.window = *s_.window;
  o.give_up_after = s_.give_up_after;
#if SLUICE_TOOL_TLS
  if (s_.hops.front().type == log_destination::kind::relp_tls) {
    sluice::tls::socket_options t;
    t.context.ca_file = s_.tls_ca;
    t.context.cert_file = s_.tls_cert;
    t.context.key_file = s_.tls_key;
    t.servername = s_.tls_name;
    t.reject_unauthorized = true;
    // A next hop that accepts TCP and says nothing does not hold the
    // connection forever.
    t.handshake_timeout = std::chrono::seconds(30);
    try {
      sluice::tls::use_tls(o, t);
    } catch (const sluice::stream_error& e) {
      why = std::string("--forward-tls-*: ") + e.what();
      return nullptr;
    }
  }
#endif
  std::error_code ec;
  auto w = sluice::make_relp_writable(o, ec);
  if (!w) {
    why = ec.message();
    return nullptr;
  }
  relp_ = w.get();
  if (s_.spool.dir.empty()) return w;
  // Each message answered once it is in the spool, fsynced; sent on from there.
  auto spooled = spool_.wrap(std::move(w), s_.spool, relay_name(s_));
  if (!spooled) why = "--spool " + s_.spool.dir + " refused";
  return spooled;
}

bool relay_output::refused(std::error_code ec) {
  if (s_.kafka()) return kafka_.refused(ec);
  // Known by the error itself: a give-up or a destroyed stream are not
  // refusals, and the sender keeps those messages to send again.
  if (!sluice::relp_writable::is_refusal(ec)) return false;
  std::string more;
  if (refused_note_.due(more))
    std::fprintf(stderr, "sluice-logd: %s: refused a message (%s): answered to its sender with a RELP error%s\n",
                 relay_name(s_).c_str(), ec.message().c_str(), more.c_str());
  return true;
}

void relay_output::add_stats(stat_table& t) const {
  if (s_.kafka()) return kafka_.add_stats(t);
  if (!relp_) return;
  using enum metric_type;
  t.insert(t.end(), {
      {"forwarded", "; # forwarded", "sluice_logd_forwarded_total",
       "Messages the next hop answered 200 (--forward).", counter, relp_->acked()},
      {"resent", ", # resent", "sluice_logd_forward_resent_total",
       "Messages sent to the next hop again after a reconnect.", counter, relp_->resent()},
      {"reconnects", ", # reconnects", "sluice_logd_forward_reconnects_total",
       "Connections to the next hops made after the first.", counter, relp_->reconnects()},
      {"refused_next_hop", ", # refused by the next hop", "sluice_logd_forward_refused_total",
       "Messages the next hop answered other than 200.", counter, relp_->refused()},
  });
  spool_.add_stats(t);
}

}  // namespace sluice_tools
