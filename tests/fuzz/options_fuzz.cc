// libFuzzer harness: one tool's option parsing (TOOL_SOURCE, its .cc, is
// included whole, its main() renamed). The input is the arguments,
// separated by NUL bytes. parse_args() ends the process on --help (0) and
// bad usage (2), so each input runs in a child: it must return or exit 0
// or 2, never die of a signal (a sanitizer report aborts), and what it
// returns must be within the bounds the tool's --help states. Linked with
// -Wl,--wrap=exit: libFuzzer's own atexit handler would turn a child's
// exit(2) into a report of "fuzz target exited".
#include <sys/wait.h>
#include <fcntl.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

#define main tool_main
#include TOOL_SOURCE
#undef main

namespace {

// The bounds each tool's --help promises.
[[maybe_unused]] bool within_bounds(const options& o) {
#if defined(TOOL_DEVNULL)
  return o.chunk_size >= 1 && o.batch >= 1 && o.batch <= 1'000'000 &&
         std::uint64_t{o.chunk_size} * o.batch <= (std::uint64_t{1} << 30) && (!o.count || *o.count >= 1) &&
         o.duration > 0 && !o.target.empty();
#elif defined(TOOL_CAT)
  return o.chunk_size >= 1 && o.chunk_size <= (std::size_t{1} << 30) && !o.files.empty();
#elif defined(TOOL_LINES)
  return o.max_line_length >= 1 && !o.files.empty();
#elif defined(TOOL_LOG)
  return !o.file.empty() && o.log.keep <= 100'000 && o.max_line_length >= 1 &&
         o.max_line_length <= (std::size_t{1} << 30) && (!o.json || o.stats);
#else
#error "define TOOL_DEVNULL, TOOL_CAT, TOOL_LINES or TOOL_LOG"
#endif
}

bool in_child = false;

}  // namespace

extern "C" [[noreturn]] void __real_exit(int status);
extern "C" [[noreturn]] void __wrap_exit(int status) {
  if (in_child) ::_exit(status);
  __real_exit(status);
}

extern "C" const char* __asan_default_options() { return "abort_on_error=1"; }
extern "C" const char* __ubsan_default_options() { return "halt_on_error=1:abort_on_error=1:print_stacktrace=1"; }

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* bytes, std::size_t size) {
  if (size > 512) return -1;
  std::vector<std::string> args{"tool"};
  std::string arg;
  for (std::size_t i = 0; i < size; ++i) {
    if (bytes[i] == 0) {
      args.push_back(arg);
      arg.clear();
    } else {
      arg += static_cast<char>(bytes[i]);
    }
  }
  if (size) args.push_back(arg);
  if (args.size() > 17) return -1;
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);

  const pid_t pid = ::fork();
  if (pid < 0) return 0;  // out of processes: try the next input
  if (pid == 0) {
    in_child = true;
    const int null = ::open("/dev/null", O_WRONLY);
    ::dup2(null, STDOUT_FILENO);
    ::dup2(null, STDERR_FILENO);
    const options o = parse_args(static_cast<int>(args.size()), argv.data());
    ::_exit(within_bounds(o) ? 0 : 3);
  }
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0) {
  }
  if (WIFSIGNALED(status) || (WEXITSTATUS(status) != 0 && WEXITSTATUS(status) != 2)) std::abort();
  return 0;
}
