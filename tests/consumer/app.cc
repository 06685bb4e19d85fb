// A program of sluice's user, built against an installed sluice by
// install_consumers.sh: once through pkg-config, once through CMake's
// find_package(sluice). It writes through a stream into stdout.
#include <unistd.h>

#include <cstdio>
#include <system_error>

#include <sluice/sluice.h>

int main() {
  auto out = sluice::make_fd_writable(STDOUT_FILENO, false, {.high_water_mark = 64});
  out->print("hello from sluice {}\n", 42);
  out->end("bye\n", [](std::error_code ec) { std::fprintf(stderr, "end: %s\n", ec ? ec.message().c_str() : "ok"); });
  sluice::loop::current().run();
}
