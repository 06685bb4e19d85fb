// sluice-trace: runs a stream scenario (tests/conformance/SCENARIOS.md)
// through sluice's streams and prints the trace, which must match the one
// Node prints for the same scenario (tests/conformance/oracle.mjs) byte for
// byte. It also runs sluice's extension commands
// (tests/conformance/ext/EXTENSIONS.md: duplex, transform, passthrough,
// pipeline, finished), which the same oracle runs in Node. The language lives in trace/scenario.h, the streams
// it drives in trace/trace_run.h.
//
//   sluice-trace FILE.scn      or      sluice-trace - < FILE.scn
//
// Exit 0 after a run; 1 when the trace cannot be written; 2 when the
// scenario is malformed or cannot be read.
#include <fcntl.h>
#include <getopt.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <system_error>

#include "tool.h"
#include "trace/scenario.h"
#include "trace/trace_run.h"

namespace {

// The whole of `fd`; `ec` set when a read fails (EISDIR for a directory).
std::string read_all(int fd, std::error_code& ec) {
  std::string text;
  char buf[65536];
  for (;;) {
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n > 0) {
      text.append(buf, static_cast<std::size_t>(n));
    } else if (n == 0) {
      return text;
    } else if (errno != EINTR) {
      ec = {errno, std::system_category()};
      return text;
    }
  }
}

void print_trace(const sluice_trace::trace_run& run) {
  for (const auto& l : run.lines()) {
    std::fwrite(l.data(), 1, l.size(), stdout);
    std::fputc('\n', stdout);
  }
}

constexpr const char* usage =
    "usage: sluice-trace [FILE.scn | -]\n"
    "Runs a stream scenario (tests/conformance/SCENARIOS.md in sluice's source)\n"
    "through sluice and prints its trace.\n"
    "Reads standard input when FILE is - or absent.\n"
    "\n"
    "Options:\n"
    "  -h, --help  show this help\n"
    "\n"
    "Exit status: 0 after a run, 1 when the trace cannot be written,\n"
    "2 for a malformed or unreadable scenario.\n"
    "\n"
    "Example: sluice-trace tests/conformance/writable-drain-once.scn\n";

constexpr sluice_tools::tool this_tool{"sluice-trace", usage};

struct options {
  std::string file;  // empty or "-": standard input
};

options parse_args(int argc, char** argv) {
  static const option long_options[] = {
      {"help", no_argument, nullptr, 'h'},
      {nullptr, 0, nullptr, 0},
  };
  opterr = 0;
  int c;
  while ((c = ::getopt_long(argc, argv, ":h", long_options, nullptr)) != -1) {
    if (c == 'h') this_tool.help();
    this_tool.bad_option(c, argv, ":h");
  }
  if (argc - optind > 1) this_tool.usage_error(std::string("one FILE only, got also '") + argv[optind + 1] + "'");
  options o;
  if (optind < argc) o.file = argv[optind];
  return o;
}

// The run: exit status 2 when the scenario cannot be read; otherwise it
// ends the process itself (see the end).
int run_trace(const options& o) {
  const std::string& file = o.file;
  const bool from_stdin = file.empty() || file == "-";
  std::error_code ec;
  std::string text;
  if (from_stdin) {
    text = read_all(STDIN_FILENO, ec);
  } else {
    int fd;
    do {
      fd = ::open(file.c_str(), O_RDONLY | O_CLOEXEC);
    } while (fd < 0 && errno == EINTR);
    if (fd < 0) {
      ec = {errno, std::system_category()};
    } else {
      text = read_all(fd, ec);
      ::close(fd);
    }
  }
  if (ec) {
    std::fprintf(stderr, "sluice-trace: cannot read %s: %s\n", from_stdin ? "standard input" : file.c_str(),
                 ec.message().c_str());
    return 2;
  }

  // Never destroyed: see the end.
  auto& run = *new sluice_trace::trace_run;
  int status = 0;
  try {
    sluice_trace::run_scenario(sluice_trace::parse_scenario(text), run);
  } catch (const sluice_trace::scenario_error& e) {
    print_trace(run);
    std::fflush(stdout);  // the trace so far, then the message
    std::fprintf(stderr, "sluice-trace: line %d: %s\n", e.line, e.message.c_str());
    status = 2;
  }
  if (status == 0) print_trace(run);
  if (!sluice_tools::close_stdout("sluice-trace") && status == 0) status = 1;
  // The streams' destructors would call callbacks still owed; the trace is
  // already printed, so leave quietly without running them.
  std::_Exit(status);
}

}  // namespace

int main(int argc, char** argv) {
  return this_tool.run(argc, argv, parse_args, run_trace);
}
