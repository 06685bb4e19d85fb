// The peer sluice's echo server is measured against: the plain Boost.Asio
// C++20 coroutine echo server, as Asio's own examples write it (one
// coroutine per connection, async_read_some then async_write of what came).
//
//   asio_echo_server [PORT]     prints "listening on PORT" on stdout
#include <utility>  // Boost 1.74's awaitable.hpp uses std::exchange without it

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>
#include <cstdio>
#include <cstdlib>

namespace asio = boost::asio;
using asio::ip::tcp;

static asio::awaitable<void> echo(tcp::socket socket) {
  char data[4096];
  try {
    for (;;) {
      std::size_t n = co_await socket.async_read_some(asio::buffer(data), asio::use_awaitable);
      co_await asio::async_write(socket, asio::buffer(data, n), asio::use_awaitable);
    }
  } catch (const std::exception&) {
    // The client went away: the connection ends, the server goes on.
  }
}

static asio::awaitable<void> listen(tcp::acceptor& acceptor) {
  for (;;) {
    tcp::socket socket = co_await acceptor.async_accept(asio::use_awaitable);
    socket.set_option(tcp::no_delay(true));
    asio::co_spawn(acceptor.get_executor(), echo(std::move(socket)), asio::detached);
  }
}

int main(int argc, char** argv) {
  unsigned short port = argc > 1 ? static_cast<unsigned short>(std::atoi(argv[1])) : 0;
  asio::io_context io(1);
  tcp::acceptor acceptor(io, tcp::endpoint(asio::ip::make_address("127.0.0.1"), port));
  std::printf("listening on %u\n", acceptor.local_endpoint().port());
  std::fflush(stdout);
  asio::signal_set stop(io, SIGTERM, SIGINT);
  stop.async_wait([&](auto, int) { io.stop(); });
  asio::co_spawn(io, listen(acceptor), asio::detached);
  io.run();
}
