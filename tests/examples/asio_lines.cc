// Runs sluice's streams on a Boost.Asio io_context (one call: attach) and
// uses them from C++20 coroutines: one writes 100000 lines into a pipe,
// awaiting room as it goes; the other reads them back, line by line.
#include <fcntl.h>
#include <unistd.h>

#include <utility>  // before Asio: g++ 12 with C++20 coroutines

#include <boost/asio/awaitable.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <cstdio>
#include <string>

#include "sluice/asio/attach.h"
#include "sluice/asio/chunks.h"
#include "sluice/asio/writer.h"
#include "sluice/sluice.h"

namespace net = boost::asio;

net::awaitable<void> produce(sluice::writable& out, bool& done) {
  sluice::asio::writer w(out);
  for (int i = 0; i < 100000; ++i)
    co_await w.async_write("line " + std::to_string(i) + "\n", net::use_awaitable);  // waits at 'drain'
  co_await w.async_end(net::use_awaitable);  // 'finish'; the pipe's end then closes
  done = true;
}

net::awaitable<void> consume(sluice::readable& in) {
  sluice::asio::lines lines(in);
  long count = 0;
  std::string last;
  while (auto line = co_await lines.async_next(net::use_awaitable)) {  // ends at 'end', throws on 'error'
    if (++count % 25000 == 0) std::printf("line %ld: %.*s\n", count, int(line->size()), line->data());
    last = *line;
  }
  std::printf("read %ld lines, the last \"%s\"\n", count, last.c_str());
}

int main() {
  net::io_context ctx;
  auto on_asio = sluice::asio::attach(ctx);  // this thread's sluice loop now runs on ctx

  int fds[2];
  if (::pipe2(fds, O_CLOEXEC | O_NONBLOCK) != 0) return 1;
  auto out = sluice::make_fd_writable(fds[1], /*close_fd=*/true);
  auto in = sluice::make_fd_readable(fds[0], /*close_fd=*/true);

  net::co_spawn(ctx, consume(*in), net::detached);
  bool written = false;
  net::co_spawn(ctx, produce(*out, written), net::detached);
  ctx.run();  // no loop::run(): the io_context runs the streams
  std::printf("writer finished: %s\n", written ? "yes" : "no");
}
