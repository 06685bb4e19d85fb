// A consumer's file: every public header (through sluice.h) compiled with a
// user's strictest usual flags (-Wall -Wextra -Wpedantic -Werror -O3). The
// calls below are the ones that once warned inside sluice's headers: end()
// with a chunk and a callback (an inline_function moved at -O3) and options
// given with designated initializers (-Wmissing-field-initializers).
#include <unistd.h>

#include <cstdio>
#include <memory>
#include <string_view>
#include <system_error>

#include "sluice/sluice.h"

int main() {
  auto w = sluice::make_fd_writable(STDOUT_FILENO, false, {.object_mode = true});
  w->write("hello\n");
  w->end("bye\n", [](std::error_code ec) { std::printf("end: %s\n", ec ? ec.message().c_str() : "ok"); });

  [[maybe_unused]] sluice::readable_options ro{.object_mode = true};
  [[maybe_unused]] sluice::pipe_options po{.end = false};
  [[maybe_unused]] sluice::duplex_options dopt{.allow_half_open = false};
  [[maybe_unused]] sluice::file_options fo{.fsync_at_end = true};
  [[maybe_unused]] sluice::log_options lo{.keep = 3};
  [[maybe_unused]] sluice::line_options lno{.buffer_size = 4096};
  [[maybe_unused]] sluice::pipeline_options plo{.end = false};
  [[maybe_unused]] sluice::finished_options fno{.error = false};
  [[maybe_unused]] sluice::writable_options wo{.emit_close = false};
  sluice::loop::current().run();
  {
    sluice::logger lg([] { return sluice::make_fd_writable(STDOUT_FILENO); }, {.on_full = sluice::full_policy::drop});
    lg.print("logger {} {} {} {}\n", 1, 2.5, std::string_view("three"), "four");
  }
}
