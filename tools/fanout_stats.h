// sluice-fanout's counts: the one table that --stats prints (its line, its
// JSON object) and --metrics serves (stat_table.h). The order is the
// line's.
#pragma once

#include <cstdint>
#include <string>

#include "stat_table.h"

namespace sluice_tools {

struct fanout_counts {
  std::uint64_t lines_in, lines_sent, lines_dropped, subscribers, cut_off;
  std::string policy;
  bool tls;  // --listen-tls: its count is in the table
  std::uint64_t tls_refused;
  std::uint64_t open_subscribers, buffered_bytes;  // now: /metrics only
};

inline stat_table fanout_stats(const fanout_counts& n) {
  using enum metric_type;
  stat_table t = {
      {"lines_in", "# lines in", "sluice_fanout_lines_received_total", "Lines read from standard input.", counter,
       n.lines_in},
      {"lines_sent", ", # sent", "sluice_fanout_lines_sent_total",
       "Lines handed to subscribers, summed over the subscribers.", counter, n.lines_sent},
      {"lines_dropped", ", # dropped", "sluice_fanout_lines_dropped_total",
       "Lines a subscriber did not get (drop: skipped; disconnect: lost with it), summed over the subscribers.",
       counter, n.lines_dropped},
      {"subscribers", ", # subscribers", "sluice_fanout_subscribers_total", "Subscribers that joined.", counter,
       n.subscribers},
      {"cut_off", ", # cut off", "sluice_fanout_cut_off_total",
       "Subscribers cut off (the policy, --write-deadline, --idle-timeout, --linger, a second signal).", counter,
       n.cut_off},
      {"policy", " (#)", "sluice_fanout_policy_info", "The policy for slow subscribers (--policy), as its label.",
       gauge, 1, "policy", n.policy},
  };
  if (n.tls)
    t.push_back({"tls_refused", ", # TLS refused", "sluice_fanout_tls_refused_total",
                 "--listen-tls handshakes that failed.", counter, n.tls_refused});
  t.push_back({nullptr, nullptr, "sluice_fanout_subscribers", "Subscribers connected now.", gauge,
               n.open_subscribers});
  t.push_back({nullptr, nullptr, "sluice_fanout_buffered_bytes",
               "Bytes written to subscribers and not yet taken by their sockets, summed, now.", gauge,
               n.buffered_bytes});
  return t;
}

}  // namespace sluice_tools
