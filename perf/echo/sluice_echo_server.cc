// sluice's echo servers for perf/echo/echo-compare.sh: a net::server whose
// connections write back each 'data' chunk (Node's echo, on sluice's own
// poll loop), or, with --coroutines, the same on a Boost.Asio io_context
// with one C++20 coroutine per connection (co_await on its chunks and on
// the room to write them), as an Asio server is written. --coroutines
// --when-full awaits the room only when write() returned false, as Node's
// `if (!socket.write(chunk)) await once(socket, 'drain')` does: one
// suspension a round trip instead of two (an Asio coroutine cannot skip the
// suspension of an operation that is done at once, so the room it finds is
// still a suspension and a resumption).
//
//   sluice_echo_server [--coroutines [--when-full]] [PORT]     prints "listening on PORT" on stdout
#include <utility>  // before Asio: Boost 1.74 with g++ 12's C++20

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string_view>

#include "sluice/asio/attach.h"
#include "sluice/asio/chunks.h"
#include "sluice/asio/writer.h"
#include "sluice/loop/loop.h"
#include "sluice/net/server.h"
#include "sluice/loop/signals.h"

namespace {

bool when_full = false;

boost::asio::awaitable<void> echo(sluice::net::socket& s) {
  sluice::asio::chunks in(s);
  sluice::asio::writer out(s);
  std::error_code ec;
  while (auto chunk = co_await in.async_next(ec, boost::asio::use_awaitable)) {
    if (s.write(*chunk) && when_full) continue;
    co_await out.async_room(ec, boost::asio::use_awaitable);
    if (ec) break;
  }
  // 'end' (the client is done) or an error: the socket ends or closes itself.
}

}  // namespace

int main(int argc, char** argv) {
  bool coroutines = false;
  int port = 0;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--coroutines") == 0)
      coroutines = true;
    else if (std::strcmp(argv[i], "--when-full") == 0)
      when_full = true;
    else
      port = std::atoi(argv[i]);
  }
  auto& loop = sluice::loop::current();
  boost::asio::io_context ctx(1);
  sluice::asio::attachment on_asio;
  if (coroutines) on_asio = sluice::asio::attach(ctx, loop);
  sluice::net::server srv;
  srv.on_connection([&](sluice::net::socket& s) {
    s.set_no_delay(true);
    s.on(sluice::event::error, [](std::error_code) {});  // a client that goes away
    if (coroutines) {
      boost::asio::co_spawn(ctx, echo(s), boost::asio::detached);
    } else {
      s.on(sluice::event::data, [&s](std::string_view chunk) { s.write(chunk); });
    }
  });
  srv.on(sluice::event::listening, [&] {
    std::printf("listening on %u\n", static_cast<unsigned>(srv.address()->port));
    std::fflush(stdout);
  });
  auto term = sluice::on_signal(loop, SIGTERM, [&] { std::exit(0); });
  srv.listen(static_cast<std::uint16_t>(port), "127.0.0.1");
  if (coroutines)
    ctx.run();
  else
    loop.run();
}
