// sluice-logd's Kafka next hop: see kafka_hop.h.
#include "logd/kafka_hop.h"

#include <cstdio>

#include "log/load_module.h"
#include "log/log_kafka.h"
#include "sluice/kafka/kafka_sink.h"  // kafka_options: a struct, no code of libsluice-kafka

namespace sluice_tools {

namespace {
bool digits(std::string_view s) noexcept {
  if (s.empty()) return false;
  for (char ch : s)
    if (ch < '0' || ch > '9') return false;
  return true;
}

// The next field up to a space; empty when there is no space after it.
std::string_view field(std::string_view& s) noexcept {
  const std::size_t sp = s.find(' ');
  if (sp == std::string_view::npos) return {};
  const std::string_view f = s.substr(0, sp);
  s.remove_prefix(sp + 1);
  return f;
}
}  // namespace

std::string_view kafka_key(std::string_view msg, std::string_view peer) noexcept {
  std::string_view host;
  if (msg.size() > 2 && msg[0] == '<') {
    const std::size_t gt = msg.find('>');
    if (gt != std::string_view::npos && gt <= 4 && digits(msg.substr(1, gt - 1))) {
      std::string_view rest = msg.substr(gt + 1);
      if (!rest.empty() && rest[0] >= '1' && rest[0] <= '9') {
        // RFC 5424: VERSION TIMESTAMP HOSTNAME.
        if (digits(field(rest)) && !field(rest).empty()) host = field(rest);
      } else if (rest.size() > 16 && rest[3] == ' ' && rest[6] == ' ' && rest[9] == ':' && rest[12] == ':' &&
                 rest[15] == ' ') {
        // RFC 3164: "Mmm dd hh:mm:ss " then HOSTNAME.
        rest.remove_prefix(16);
        host = field(rest);
      }
    }
  }
  if (!host.empty() && host != "-") return host;
  if (peer.rfind("unix:", 0) == 0) return peer;
  // "ADDRESS:PORT": the port changes with each connection, the host does not.
  const std::size_t colon = peer.rfind(':');
  return colon == std::string_view::npos ? peer : peer.substr(0, colon);
}

std::unique_ptr<sluice::writable> kafka_hop::open(const log_destination& dest,
                                                  const std::vector<std::pair<std::string, std::string>>& config,
                                                  std::optional<std::chrono::milliseconds> give_up_after,
                                                  std::string& why) {
#if SLUICE_LOGD_KAFKA
  auto make = reinterpret_cast<sluice_log_make_kafka_fn>(
      load_module_symbol("sluice-log-kafka.so", SLUICE_LOGD_KAFKA_MODULE, "sluice_log_make_kafka", why));
  if (make) {
    produce_ = load_module_symbol("sluice-log-kafka.so", SLUICE_LOGD_KAFKA_MODULE, "sluice_log_kafka_produce", why);
    order_->refused_fn =
        load_module_symbol("sluice-log-kafka.so", SLUICE_LOGD_KAFKA_MODULE, "sluice_log_kafka_refused", why);
  }
  if (!make || !produce_ || !order_->refused_fn) {
    why = "cannot load sluice-log's Kafka module: " + why;
    return nullptr;
  }
  sluice::kafka_options k;
  k.topic = dest.topic;
  k.framed = true;
  k.refusals_fail_alone = true;
  // The answer means the broker wrote it to every in-sync replica, once:
  // a retry after a lost answer is not stored twice.
  k.config = {{"bootstrap.servers", dest.brokers}, {"acks", "all"}, {"enable.idempotence", "true"},
              {"message.timeout.ms", std::to_string(give_up_after ? give_up_after->count() : 0)}};
  k.config.insert(k.config.end(), config.begin(), config.end());
  order_->name = "next hop kafka://" + dest.brokers + "/" + dest.topic;
  sluice::writable* w = make(&k, &why);
  out_ = w;
  return std::unique_ptr<sluice::writable>(w);
#else
  (void)dest, (void)config, (void)give_up_after;
  why = "this sluice-logd was built without Kafka";
  return nullptr;
#endif
}

bool kafka_hop::write(std::string_view msg, std::string_view peer, sluice::write_cb cb) {
  in_order& o = *order_;
  const std::uint64_t n = o.first + o.waiting.size();
  o.waiting.push_back({std::move(cb), {}, false});
  sluice::write_cb report = [order = &o, n](std::error_code ec) { order->settle(n, ec); };
  return reinterpret_cast<sluice_log_kafka_produce_fn>(produce_)(out_, kafka_key(msg, peer), msg, &report);
}

// Marks write `n` settled, then gives back every settled callback from the
// oldest on: an answer never overtakes one of an earlier message.
void kafka_hop::in_order::settle(std::uint64_t n, std::error_code ec) noexcept {
  entry& e = waiting[n - first];
  e.settled = true;
  e.ec = ec;
  if (!ec) ++forwarded;
  else if (refused_by_broker(ec)) {
    ++refused;
    std::string more;
    if (refused_note.due(more))
      std::fprintf(stderr, "sluice-logd: %s: refused a message (%s): answered to its sender with a RELP error%s\n",
                   name.c_str(), ec.message().c_str(), more.c_str());
  }
  if (releasing) return;  // a callback's own write settled: the loop below takes it
  releasing = true;
  while (!waiting.empty() && waiting.front().settled) {
    entry done = std::move(waiting.front());
    waiting.pop_front();
    ++first;
    if (done.cb) done.cb(done.ec);
  }
  releasing = false;
}

bool kafka_hop::in_order::refused_by_broker(std::error_code ec) const noexcept {
  return ec && refused_fn && reinterpret_cast<sluice_log_kafka_refused_fn>(refused_fn)(&ec);
}

bool kafka_hop::refused(std::error_code ec) const noexcept { return order_->refused_by_broker(ec); }

void kafka_hop::add_stats(stat_table& t) const {
  using enum metric_type;
  t.insert(t.end(), {
      {"forwarded", "; # forwarded", "sluice_logd_forwarded_total",
       "Messages the next hop acknowledged (--forward).", counter, order_->forwarded},
      {"refused_next_hop", ", # refused by the next hop", "sluice_logd_forward_refused_total",
       "Messages the next hop refused (answered with an error).", counter, order_->refused},
  });
}

}  // namespace sluice_tools
