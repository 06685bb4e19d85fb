// The skeleton every sluice tool's main() runs in: the same set-up, the
// same last catch, the same usage errors and --help, so that the seven
// tools cannot drift apart on them.
//
//   constexpr sluice_tools::tool this_tool{"sluice-cat", usage_text};
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
#include <cstring>
#include <exception>
#include <new>
#include <string>
#include <system_error>

#include "close_stdout.h"

namespace sluice_tools {

struct tool {
  const char* name;   // "sluice-cat": the prefix of every message
  const char* usage;  // the --help text

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
  /// and `shorts`, its optstring, starting with ':'): ':' is a missing
  /// value, anything else an unknown option or a value given to a long
  /// option that takes none, named as the user wrote it.
  [[noreturn]] void bad_option(int c, char** argv, const char* shorts) const {
    if (c == ':') usage_error(std::string("option '") + argv[optind - 1] + "' needs a value");
    // An unknown short option may be one of several in one argument (-vx),
    // where optind has not moved on: name that letter alone. (A long
    // option's error sets optopt to its own value, never an unknown letter.)
    if (optopt > 0 && optopt < 256 && optopt != ':' && !std::strchr(shorts, optopt))
      usage_error(std::string("unknown option '-") + static_cast<char>(optopt) + "'");
    const std::string arg = argv[optind - 1];
    // glibc names a long option in optopt only when it knows it: then it
    // was given a value it does not take (--json=1).
    if (optopt != 0 && arg.rfind("--", 0) == 0)
      usage_error("option '" + arg.substr(0, arg.find('=')) + "' takes no value");
    usage_error("unknown option '" + arg + "'");
  }

  /// main()'s body: the set-up, parse(argc, argv), then body(options).
  /// An exception that nothing takes (resources that run out where the
  /// streams cannot turn it into an error of their own: building them, a
  /// buffer in a callback of the loop, a signal watch's fd) ends the run
  /// with one message and exit status 1, never std::terminate's abort.
  /// There is deliberately no catch here: with a handler up the stack, the
  /// exception would unwind through the loop and the tool's streams in
  /// the middle of a callback, whose destructors then run on state half
  /// changed (a crash while unwinding, SIGSEGV); with none, the runtime
  /// calls the terminate handler at the throw, nothing unwound, and so it
  /// does when the exception meets a noexcept function on its way.
  template <class Parse, class Body>
  int run(int argc, char** argv, Parse parse, Body body) const {
    // First: the std fds must be taken before anything opens a file.
    reserve_std_fds();
    close_stdout_at_exit(name);
    the_name() = name;
    std::set_terminate(&uncaught);
    const auto o = parse(argc, argv);
    // A reader that goes away (EPIPE) or a file past `ulimit -f` (EFBIG) is
    // an error to report, not a reason to die.
    ::signal(SIGPIPE, SIG_IGN);
    ::signal(SIGXFSZ, SIG_IGN);
    return body(o);
  }

 private:
  static const char*& the_name() noexcept {
    static const char* n = "sluice";
    return n;
  }

  // The terminate handler: what the exception says, exit status 1. Only
  // async-signal-safe calls after the message: the process is in an
  // unknown state, so no exit handlers, no destructors.
  [[noreturn]] static void uncaught() noexcept {
    const char* why = "terminated";
    if (const std::exception_ptr e = std::current_exception()) {
      try {
        std::rethrow_exception(e);
      } catch (const std::bad_alloc&) {
        why = "out of memory";
      } catch (const std::exception& x) {
        why = x.what();
      } catch (...) {
        why = "an unknown exception";
      }
    }
    std::fprintf(stderr, "%s: %s\n", the_name(), why);
    std::_Exit(1);
  }
};

}  // namespace sluice_tools
