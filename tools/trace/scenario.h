// The scenario language of sluice-trace (tests/conformance/SCENARIOS.md,
// tests/conformance/ext/EXTENSIONS.md). parse_scenario() checks a whole
// scenario and turns it into steps without running anything, so that a
// malformed line is reported before the first stream exists (and a fuzzer
// can call it alone); run_scenario() then runs the steps against a
// trace_run.
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "trace_run.h"

namespace sluice_trace {

/// A malformed scenario line, or a step that cannot run (`complete` with no
/// pending sink call). `line` counts from 1.
struct scenario_error {
  int line;
  std::string message;
};

/// One command of a scenario: `tick` lets the loop run until idle; any other
/// command is `run` against the trace.
struct step {
  int line = 0;
  bool tick = false;
  std::function<void(trace_run&)> run;
};

/// Throws scenario_error naming the first malformed line.
std::vector<step> parse_scenario(std::string_view text);

/// Runs `steps` on the current thread's loop, then the implicit final tick.
/// Commands between ticks run back to back, in one synchronous turn; a
/// command that throws in Node prints `throw WHAT` and the run goes on.
/// Throws scenario_error for a step that cannot run; the trace so far stays
/// in `run`.
void run_scenario(const std::vector<step>& steps, trace_run& run);

}  // namespace sluice_trace
