// Prometheus' text exposition format (version 0.0.4), written: a family's
// '# HELP' and '# TYPE' lines, then its samples, 'name{label="value"} N'.
// The format escapes a HELP text's backslash and newline, and a label
// value's backslash, double quote and newline; nothing else. Names are the
// tools' own constants ([a-zA-Z_:][a-zA-Z0-9_:]*), not escaped.
//
//   sluice_tools::metrics_text t;
//   t.family("sluice_logd_messages_received_total", "Messages read.", sluice_tools::metric_type::counter);
//   t.sample("sluice_logd_messages_received_total", 42);
//   t.str();  // "# HELP ...\n# TYPE ... counter\nsluice_logd_messages_received_total 42\n"
#pragma once

#include <cstdint>
#include <cstdio>
#include <initializer_list>
#include <string>
#include <string_view>
#include <utility>

namespace sluice_tools {

enum class metric_type { counter, gauge };

class metrics_text {
 public:
  using label = std::pair<std::string_view, std::string_view>;  // name, value

  /// '# HELP name help' and '# TYPE name counter|gauge': once a family,
  /// before its samples.
  void family(std::string_view name, std::string_view help, metric_type type) {
    out_ += "# HELP ";
    out_ += name;
    out_ += ' ';
    escape(help, false);
    out_ += "\n# TYPE ";
    out_ += name;
    out_ += type == metric_type::counter ? " counter\n" : " gauge\n";
  }

  /// One sample of the family named last: 'name{a="x",b="y"} value'.
  void sample(std::string_view name, std::uint64_t value, std::initializer_list<label> labels = {}) {
    out_ += name;
    if (labels.size() != 0) {
      char sep = '{';
      for (const auto& [k, v] : labels) {
        out_ += sep;
        out_ += k;
        out_ += "=\"";
        escape(v, true);
        out_ += '"';
        sep = ',';
      }
      out_ += '}';
    }
    out_ += ' ';
    out_ += std::to_string(value);
    out_ += '\n';
  }

  /// One sample without labels whose value is not whole (seconds), to the
  /// millisecond.
  void sample(std::string_view name, double value) {
    char v[32];
    std::snprintf(v, sizeof v, " %.3f\n", value);
    out_ += name;
    out_ += v;
  }

  const std::string& str() const noexcept { return out_; }

 private:
  // HELP: \\ and \n; a label value also \". Any other byte (UTF-8 too) as
  // it is.
  void escape(std::string_view s, bool quote) {
    for (const char c : s) {
      if (c == '\\') out_ += "\\\\";
      else if (c == '\n') out_ += "\\n";
      else if (c == '"' && quote) out_ += "\\\"";
      else out_ += c;
    }
  }

  std::string out_;
};

}  // namespace sluice_tools
