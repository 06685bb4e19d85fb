// sluice's echo server for perf/echo/echo-compare.sh: a net::server whose
// connections write back each 'data' chunk, Node's echo written with
// sluice's streams.
//
//   sluice_echo_server [PORT]     prints "listening on PORT" on stdout
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <string_view>

#include "sluice/loop.h"
#include "sluice/net/server.h"
#include "sluice/signals.h"

int main(int argc, char** argv) {
  const auto port = static_cast<std::uint16_t>(argc > 1 ? std::atoi(argv[1]) : 0);
  auto& loop = sluice::loop::current();
  sluice::net::server srv;
  srv.on_connection([](sluice::net::socket& s) {
    s.set_no_delay(true);
    s.on(sluice::event::data, [&s](std::string_view chunk) { s.write(chunk); });
    s.on(sluice::event::error, [](std::error_code) {});  // a client that goes away
  });
  srv.on(sluice::event::listening, [&] {
    std::printf("listening on %u\n", static_cast<unsigned>(srv.address()->port));
    std::fflush(stdout);
  });
  auto term = sluice::on_signal(loop, SIGTERM, [&] { std::exit(0); });
  srv.listen(port, "127.0.0.1");
  loop.run();
}
