// A tool's counts as one table, read by --stats (its line and its JSON
// object) and by --metrics (Prometheus' text format), so that the three
// cannot drift apart: a count added to the table is in all three.
//
// Each row names the count once for each reader: its --stats --json key,
// its fragment of the --stats line ('#' is the value: ", # bytes"), its
// Prometheus name and HELP text. A row without a key and a fragment is for
// /metrics only (a gauge of what is now: connections open, bytes
// buffered); one without a metric name is for --stats only. A row with a
// `label` holds text, not a number (sluice-fanout's policy): its value is
// that text in --stats, and in /metrics an info gauge, 1, with the text as
// the label's value.
//
//   sluice_tools::stat_table t = {
//       {"messages", "# messages", "sluice_logd_messages_received_total", "Messages read.", counter, n},
//       {"bytes", ", # bytes", "sluice_logd_received_bytes_total", "Their bytes.", counter, b},
//   };
//   std::fputs(sluice_tools::stats_line("sluice-logd", t).c_str(), stderr);  // "sluice-logd: 3 messages, 42 bytes\n"
#pragma once

#include <cstdint>
#include <cstdio>
#include <optional>
#include <string>
#include <vector>

#include "metrics_text.h"

namespace sluice_tools {

struct stat_row {
  const char* key;     // --stats --json's key; null: not in --stats
  const char* text;    // the --stats line's fragment, '#' for the value; null: not in the line
  const char* metric;  // the Prometheus name; null: not in /metrics
  const char* help;    // its HELP text
  metric_type type;
  std::uint64_t value;
  const char* label = nullptr;  // a row of text: the label's name in /metrics
  std::string label_value{};    // and the text
  std::optional<double> real{};  // a /metrics row whose value is not whole (seconds): in place of `value`
};

using stat_table = std::vector<stat_row>;

// "TOOL: " and every row's fragment, the value in place of its '#'; LF.
inline std::string stats_line(const char* tool, const stat_table& t) {
  std::string s = std::string(tool) + ": ";
  for (const stat_row& r : t) {
    if (!r.text) continue;
    for (const char* p = r.text; *p; ++p) {
      if (*p != '#') s += *p;
      else s += r.label ? r.label_value : std::to_string(r.value);
    }
  }
  return s + '\n';
}

// The rows with a key, as one JSON object on one line; a text row's value
// is a string (the tools' texts need no escaping: policy names).
inline std::string stats_json(const stat_table& t) {
  std::string s = "{";
  for (const stat_row& r : t) {
    if (!r.key) continue;
    if (s.size() > 1) s += ',';
    s += '"';
    s += r.key;
    s += "\":";
    s += r.label ? '"' + r.label_value + '"' : std::to_string(r.value);
  }
  return s + "}\n";
}

// --stats on standard error: the line, or with --json the object.
inline void print_stats(const char* tool, const stat_table& t, bool json) {
  const std::string s = json ? stats_json(t) : stats_line(tool, t);
  std::fputs(s.c_str(), stderr);
}

// The rows with a metric name, a family each, into `out`.
inline void write_metrics(const stat_table& t, metrics_text& out) {
  for (const stat_row& r : t) {
    if (!r.metric) continue;
    out.family(r.metric, r.help, r.type);
    if (r.label) out.sample(r.metric, 1, {{r.label, r.label_value}});
    else if (r.real) out.sample(r.metric, *r.real);
    else out.sample(r.metric, r.value);
  }
}

}  // namespace sluice_tools
