// tools/metrics_text.h and tools/stat_table.h: the exposition format's
// escapes (a HELP text's backslash and newline; a label value's backslash,
// double quote and newline), and one table printed as the --stats line, its
// JSON object and /metrics.
#include "metrics_text.h"
#include "stat_table.h"

#include <doctest/doctest.h>

using sluice_tools::metric_type;

TEST_CASE("a HELP text escapes backslash and newline, and nothing else") {
  sluice_tools::metrics_text t;
  t.family("x_total", "a \\ b\nc \"d\"", metric_type::counter);
  CHECK(t.str() == "# HELP x_total a \\\\ b\\nc \"d\"\n# TYPE x_total counter\n");
}

TEST_CASE("a label value escapes backslash, double quote and newline") {
  sluice_tools::metrics_text t;
  t.sample("x_info", 1, {{"a", "p\\q\"r\ns"}, {"b", "é"}});
  CHECK(t.str() == "x_info{a=\"p\\\\q\\\"r\\ns\",b=\"é\"} 1\n");
}

TEST_CASE("a value that is not whole is written to the millisecond") {
  sluice_tools::metrics_text t;
  t.sample("age_seconds", 1.23456);
  CHECK(t.str() == "age_seconds 1.235\n");
}

TEST_CASE("one table makes the --stats line, its JSON object and /metrics") {
  using enum metric_type;
  const sluice_tools::stat_table table = {
      {"messages", "# messages", "t_messages_total", "Messages.", counter, 3},
      {"bytes", ", # bytes", "t_bytes_total", "Bytes.", counter, 42},
      {"policy", " (#)", "t_policy_info", "Policy.", gauge, 1, "policy", "drop"},
      {nullptr, nullptr, "t_open", "Open now.", gauge, 2},
      {"old", "; # old", nullptr, nullptr, counter, 7},
  };
  CHECK(sluice_tools::stats_line("tool", table) == "tool: 3 messages, 42 bytes (drop); 7 old\n");
  CHECK(sluice_tools::stats_json(table) == "{\"messages\":3,\"bytes\":42,\"policy\":\"drop\",\"old\":7}\n");
  sluice_tools::metrics_text m;
  sluice_tools::write_metrics(table, m);
  CHECK(m.str() ==
        "# HELP t_messages_total Messages.\n# TYPE t_messages_total counter\nt_messages_total 3\n"
        "# HELP t_bytes_total Bytes.\n# TYPE t_bytes_total counter\nt_bytes_total 42\n"
        "# HELP t_policy_info Policy.\n# TYPE t_policy_info gauge\nt_policy_info{policy=\"drop\"} 1\n"
        "# HELP t_open Open now.\n# TYPE t_open gauge\nt_open 2\n");
}
