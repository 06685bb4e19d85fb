// shutdown_child: writes lines "1\n" .. "N\n" through one kind of stream and
// then leaves in one way, without end(). tests/stream/shutdown_test.cc runs it and
// checks that the file holds exactly those lines, in order.
//
//   shutdown_child KIND MODE PATH N
//
// KIND: fd      make_fd_writable over an fd opened on PATH
//       file    make_file_writable(PATH)
//       log     make_log_writable(PATH)
//       worker  make_worker_writable over a file_worker on PATH
// MODE: return  heap streams (and worker), never destroyed; return from main
//       exit    std::exit(0) from inside loop::run(), between two turns'
//               writes, with the last turn's writes still held
//       scope   the unique_ptr goes out of scope without end() and without
//               running the loop again; then _exit(0), so that only the
//               destructor can have written
//       static  a function-local static stream; return from main
//       flood   (worker) many turns' batches handed to the worker as fast as
//               possible, then std::exit(0) at once
#include <fcntl.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <string_view>

#include "sluice/factories.h"
#include "sluice/loop/loop.h"
#include "sluice/sinks/file_sink.h"
#include "sluice/sinks/file_worker.h"
#include "sluice/sinks/log_file_sink.h"
#include "sluice/sinks/worker_sink.h"
#include "sluice/stream/writable.h"

namespace {

std::string kind, mode, path;
int n_lines = 0;
int next_line = 1;

std::unique_ptr<sluice::writable> make_stream() {
  if (kind == "fd") {
    const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) std::exit(10);
    return sluice::make_fd_writable(fd, true);
  }
  if (kind == "file") return sluice::make_file_writable(path);
  if (kind == "log") return sluice::make_log_writable(path);
  if (kind == "worker") {
    // Never destroyed: its thread still runs when the process exits.
    auto* worker = new sluice::file_worker(path);
    return sluice::make_worker_writable(*worker);
  }
  std::exit(11);
}

// Lines written one at a time; every other one with print(), some with a
// callback, as a program would.
void write_lines(sluice::writable& w, int count) {
  for (int i = 0; i < count && next_line <= n_lines; ++i, ++next_line) {
    if (next_line % 2 == 0) {
      w.print("{}\n", next_line);
    } else {
      w.write(std::to_string(next_line) + "\n", [](std::error_code) {});
    }
  }
}

// Writes 1000 lines a turn (through set_immediate); calls exit(0) right after
// the turn that writes the last line, before the loop flushes it.
void write_turns(sluice::writable& w) {
  write_lines(w, mode == "flood" ? 97 : 1000);
  if (next_line > n_lines) std::exit(0);
  sluice::loop::current().set_immediate([&w] { write_turns(w); });
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 5) {
    std::fprintf(stderr, "usage: shutdown_child KIND MODE PATH N\n");
    return 2;
  }
  kind = argv[1];
  mode = argv[2];
  path = argv[3];
  n_lines = std::atoi(argv[4]);

  if (mode == "return") {
    sluice::writable* w = make_stream().release();
    write_lines(*w, n_lines / 2);
    sluice::loop::current().run_until_idle();  // some out already
    write_lines(*w, n_lines);                  // the rest held
    return 0;
  }
  if (mode == "exit" || mode == "flood") {
    auto w = make_stream();
    write_turns(*w);
    sluice::loop::current().run();
    return 12;  // exit() came first
  }
  if (mode == "scope") {
    {
      auto w = make_stream();
      write_lines(*w, n_lines / 2);
      sluice::loop::current().run_until_idle();
      write_lines(*w, n_lines);
    }
    ::_exit(0);
  }
  if (mode == "static") {
    static std::unique_ptr<sluice::writable> w = make_stream();
    write_lines(*w, n_lines);
    return 0;
  }
  return 13;
}
