// libFuzzer harness: sluice-trace's scenarios, parsed and run through the
// streams, then every stream destroyed and deleted. Bounded: the text is
// at most 4 KiB, and a scenario whose pipes or pipelines make a cycle (a
// passthrough piped into itself flows forever, in Node too) is skipped.
#include <cstddef>
#include <cstdint>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "trace/scenario.h"
#include "trace/trace_run.h"

namespace {

// Whether the streams piped (pipe A B, pipeline A B C ...) form a cycle.
bool pipes_cycle(std::string_view text) {
  std::map<std::string, std::set<std::string>> edges;
  std::istringstream in{std::string(text)};
  std::string line;
  while (std::getline(in, line)) {
    if (auto hash = line.find('#'); hash != std::string::npos) line.erase(hash);
    std::istringstream words(line);
    std::string cmd, w;
    std::vector<std::string> args;
    words >> cmd;
    while (words >> w) args.push_back(w);
    if (cmd != "pipe" && cmd != "pipeline") continue;
    for (std::size_t i = 0; i + 1 < args.size(); ++i) edges[args[i]].insert(args[i + 1]);
  }
  // Depth-first search for a back edge.
  std::map<std::string, int> colour;  // 0 new, 1 on the path, 2 done
  auto visit = [&](auto&& self, const std::string& v) -> bool {
    colour[v] = 1;
    for (const auto& next : edges[v]) {
      if (colour[next] == 1) return true;
      if (colour[next] == 0 && self(self, next)) return true;
    }
    colour[v] = 2;
    return false;
  };
  for (const auto& [v, _] : edges)
    if (colour[v] == 0 && visit(visit, v)) return true;
  return false;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* bytes, std::size_t size) {
  if (size > 4096) return -1;
  const std::string_view text(reinterpret_cast<const char*>(bytes), size);
  std::vector<sluice_trace::step> steps;
  try {
    steps = sluice_trace::parse_scenario(text);
  } catch (const sluice_trace::scenario_error&) {
    return -1;  // not a scenario: no use for the corpus
  }
  if (pipes_cycle(text)) return -1;
  auto& loop = sluice::loop::current();
  {
    sluice_trace::trace_run run;
    try {
      sluice_trace::run_scenario(steps, run);
    } catch (const sluice_trace::scenario_error&) {
      // `complete` with nothing pending: the run stops there, as sluice-trace's does.
    }
    // The end of a program that uses the streams: destroy them, let the
    // loop settle, delete them.
    run.destroy_all();
    loop.run_until_idle();
  }
  loop.run_until_idle();
  return 0;
}
