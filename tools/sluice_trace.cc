// sluice-trace: runs a stream scenario (../shared/conformance/SCENARIOS.md)
// through sluice's streams and prints the trace, which must match the one
// Node prints for the same scenario (oracle.mjs) byte for byte. It also runs
// sluice's extension commands (tests/conformance/ext/EXTENSIONS.md: duplex,
// transform, passthrough, pipeline, finished), whose reference is
// ext/oracle-ext.mjs. The language lives in trace/scenario.h, the streams
// it drives in trace/trace_run.h.
//
//   sluice-trace FILE.scn      or      sluice-trace - < FILE.scn
//
// Exit 0 after a run; 2 when the scenario is malformed or cannot be read.
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>

#include "trace/scenario.h"
#include "trace/trace_run.h"

namespace {

void print_trace(const sluice_trace::trace_run& run) {
  for (const auto& l : run.lines()) std::fputs((l + "\n").c_str(), stdout);
  std::fflush(stdout);
}

const char* usage =
    "usage: sluice-trace [FILE.scn | -]\n"
    "Runs a stream scenario (see SCENARIOS.md) through sluice and prints its trace.\n"
    "Reads standard input when FILE is - or absent.\n"
    "Exit status: 0 after a run, 2 for a malformed or unreadable scenario.\n";

}  // namespace

int main(int argc, char** argv) {
  std::string file;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "-h" || a == "--help") {
      std::fputs(usage, stdout);
      return 0;
    }
    if (!file.empty() || (a.size() > 1 && a[0] == '-')) {
      std::fprintf(stderr, "sluice-trace: unexpected argument '%s'\n%s", a.c_str(), usage);
      return 2;
    }
    file = a;
  }

  std::string text;
  if (file.empty() || file == "-") {
    std::ostringstream ss;
    ss << std::cin.rdbuf();
    text = ss.str();
  } else {
    std::ifstream in(file, std::ios::binary);
    if (!in) {
      std::fprintf(stderr, "sluice-trace: cannot read %s\n", file.c_str());
      return 2;
    }
    std::ostringstream ss;
    ss << in.rdbuf();
    text = ss.str();
  }

  // Never destroyed: see the end.
  auto& run = *new sluice_trace::trace_run;
  int status = 0;
  try {
    sluice_trace::run_scenario(sluice_trace::parse_scenario(text), run);
  } catch (const sluice_trace::scenario_error& e) {
    print_trace(run);
    std::fprintf(stderr, "sluice-trace: line %d: %s\n", e.line, e.message.c_str());
    status = 2;
  }
  if (status == 0) print_trace(run);
  std::fflush(stdout);
  // The streams' destructors would call callbacks still owed; the trace is
  // already printed, so leave quietly without running them.
  std::_Exit(status);
}
