// What a failing disk looks like: every write callback hears the error, then
// 'error' and 'close' follow. /dev/full fails every write with ENOSPC.
#include <cstdio>

#include "sluice/sluice.h"

int main() {
  auto full = sluice::make_file_writable("/dev/full");
  for (const char* chunk : {"a\n", "b\n"})
    full->write(chunk, [chunk](std::error_code ec) {
      std::printf("write %c: %s\n", chunk[0], sluice::code_name(ec).c_str());
    });
  full->end([](std::error_code ec) { std::printf("end: %s\n", sluice::code_name(ec).c_str()); });
  full->on(sluice::event::error, [](std::error_code ec) { std::printf("error: %s\n", ec.message().c_str()); });
  full->on(sluice::event::close, [] { std::printf("close\n"); });
  sluice::loop::current().run();
}
