// The skeleton every sluice tool's main() runs in: the same set-up, the
// same last catch, the same usage errors and --help, so that the seven
// tools cannot drift apart on them.
//
//   constexpr sluice_tools::tool this_tool{"sluice-cat", usage_text, sluice_tools::ignore_pipe_and_xfsz};
//   ... this_tool.usage_error("...") in parse_args() ...
//   int main(int argc, char** argv) {
//     return this_tool.run(argc, argv, parse_args, [](const options& o) { return cat(o).run(); });
//   }
//
// parse_args() stays a function of its own (the fuzz harness,
// tests/fuzz/options_fuzz.cc, calls it): it ends the process with exit(0)
// (--help) or exit(2) (bad usage), or returns the options.
#pragma once

#include <getopt.h>
#include <signal.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <new>
#include <string>
#include <system_error>

#include "close_stdout.h"

namespace sluice_tools {

// The signals whose default action (death) a tool turns into an error it
// reports: SIGPIPE (a reader that went away: EPIPE) and SIGXFSZ (a file past
// `ulimit -f`: EFBIG).
enum class ignored_signals { none, pipe, pipe_and_xfsz };
inline constexpr ignored_signals ignore_nothing = ignored_signals::none;
inline constexpr ignored_signals ignore_pipe = ignored_signals::pipe;
inline constexpr ignored_signals ignore_pipe_and_xfsz = ignored_signals::pipe_and_xfsz;

struct tool {
  const char* name;   // "sluice-cat": the prefix of every message
  const char* usage;  // the --help text
  ignored_signals ignores = ignore_pipe_and_xfsz;

  /// Bad usage: one line, the pointer to --help, exit status 2.
  [[noreturn]] void usage_error(const std::string& msg) const {
    std::fprintf(stderr, "%s: %s\nTry '%s --help' for more information.\n", name, msg.c_str(), name);
    std::exit(2);
  }

  /// --help: the usage on standard output, exit status 0, or 1 when it did
  /// not land (a full disk, a closed pipe). The text is longer than stdout's
  /// buffer: a failed write's errno is gone by the exit's close, so it is
  /// checked here.
  [[noreturn]] void help() const {
    errno = 0;
    if (std::fputs(usage, stdout) == EOF || std::fflush(stdout) != 0)
      std::exit(close_stdout(name, errno) ? 0 : 1);
    std::exit(0);
  }

  /// getopt_long()'s answer for an option it did not take (with opterr = 0
  /// and optstring starting with ':'): ':' is a missing value, anything else
  /// an unknown option, named as the user wrote it.
  [[noreturn]] void bad_option(int c, char** argv) const {
    if (c == ':') usage_error(std::string("option '") + argv[optind - 1] + "' needs a value");
    // An unknown short option may be one of several in one argument (-vx):
    // name that letter alone.
    if (optopt > 0 && optopt < 256) usage_error(std::string("unknown option '-") + static_cast<char>(optopt) + "'");
    usage_error(std::string("unknown option '") + argv[optind - 1] + "'");
  }

  /// main()'s body: the set-up, parse(argc, argv), then body(options).
  /// Resources that run out where the streams cannot turn it into an error
  /// of their own (building them, the loop's poll, a signal watch's fd) end
  /// the run with a message and exit status 1, never std::terminate.
  template <class Parse, class Body>
  int run(int argc, char** argv, Parse parse, Body body) const {
    // First: the std fds must be taken before anything opens a file.
    reserve_std_fds();
    close_stdout_at_exit(name);
    try {
      const auto o = parse(argc, argv);
      if (ignores != ignore_nothing) ::signal(SIGPIPE, SIG_IGN);
      if (ignores == ignore_pipe_and_xfsz) ::signal(SIGXFSZ, SIG_IGN);
      return body(o);
    } catch (const std::bad_alloc&) {
      std::fprintf(stderr, "%s: out of memory\n", name);
    } catch (const std::system_error& e) {
      std::fprintf(stderr, "%s: %s\n", name, e.what());
    }
    return 1;
  }
};

}  // namespace sluice_tools
