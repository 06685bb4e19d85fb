// Writes 10 lines to stdout with a high-water mark of 32 bytes, pausing on
// false and going on at 'drain', the way Node programs write.
#include <unistd.h>

#include <cstdio>
#include <string>

#include "sluice/sluice.h"

int main() {
  auto out = sluice::make_fd_writable(STDOUT_FILENO, false, {.high_water_mark = 32});
  int next = 0;
  int drains = 0;
  // Writes until write() says the stream is full, then waits for 'drain'.
  auto write_some = [&] {
    while (next < 10) {
      const std::string line = "line " + std::to_string(next++) + "\n";
      if (!out->write(line)) return;
    }
    out->end([&](std::error_code ec) {
      std::fprintf(stderr, "finished: %s, after %d drains\n", ec ? ec.message().c_str() : "ok", drains);
    });
  };
  out->on(sluice::event::drain, [&] {
    ++drains;
    write_some();
  });
  write_some();
  sluice::loop::current().run();
}
