// libFuzzer harness: one tool's option parsing (TOOL_SOURCE, its .cc, is
// included whole, its main() renamed). The input is the arguments,
// separated by NUL bytes. parse_args() must return options within the
// bounds the tool's --help states, or end the run with exit(0) (--help) or
// exit(2) (bad usage), never anything else, never crash.
//
// It runs in process, so that libFuzzer sees its coverage: the binary is
// linked with -Wl,--wrap=exit, and while parse_args() runs, exit() jumps
// back here instead (what the jump skips leaks, so leaks are not checked).
// Run with -close_fd_mask=3 to silence the tools' messages.
#include <fcntl.h>
#include <unistd.h>

#include <csetjmp>
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
  return !o.dest_text.empty() && o.log.keep <= 100'000 && o.max_line_length >= 1 &&
         o.max_line_length <= (std::size_t{1} << 30) && (!o.json || o.stats);
#else
#error "define TOOL_DEVNULL, TOOL_CAT, TOOL_LINES or TOOL_LOG"
#endif
}

std::jmp_buf exit_jump;
bool parsing = false;

}  // namespace

// What the jumps skip leaks, by design: no leak check, not even at exit.
extern "C" const char* __asan_default_options() { return "detect_leaks=0"; }

extern "C" [[noreturn]] void __real_exit(int status);
extern "C" [[noreturn]] void __wrap_exit(int status) {
  if (parsing) {
    parsing = false;
    std::longjmp(exit_jump, status + 1);
  }
  __real_exit(status);
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* bytes, std::size_t size) {
  if (size > 512) return -1;
  static std::vector<std::string> args;
  static std::vector<char*> argv;
  args.assign({"tool"});
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
  argv.clear();
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);

  optind = 0;  // getopt_long starts afresh (glibc)
  if (const int jumped = setjmp(exit_jump)) {
    const int status = jumped - 1;
    if (status != 0 && status != 2) std::abort();
    return 0;
  }
  parsing = true;
  const options o = parse_args(static_cast<int>(args.size()), argv.data());
  parsing = false;
  if (!within_bounds(o)) std::abort();
  return 0;
}
