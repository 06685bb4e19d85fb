// A server on every core: one io_context, one sluice loop and one
// net::server per thread, all listening on the same port with SO_REUSEPORT,
// so that the kernel spreads the connections over the threads. Each
// connection is an echo (socket.pipe(socket), backpressure included). The
// main thread is the client: it connects 40 times, checks every echo, then
// has each server thread close its server, which ends its io_context.
#include <utility>  // before Asio: Boost 1.74 with g++ 12's C++20

#include <atomic>
#include <boost/asio/io_context.hpp>
#include <cstdio>
#include <latch>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "sluice/asio/attach.h"
#include "sluice/loop/loop.h"
#include "sluice/net/server.h"
#include "sluice/net/socket.h"

namespace {

constexpr int threads = 2;
constexpr int connections = 40;

// One core's server: its io_context runs its loop, and nothing else.
struct core {
  boost::asio::io_context ctx{1};
  sluice::loop loop;
  std::unique_ptr<sluice::net::server> server;
  std::atomic<int> served{0};
};

}  // namespace

int main() {
  std::vector<std::unique_ptr<core>> cores;
  for (int i = 0; i < threads; ++i) cores.push_back(std::make_unique<core>());
  std::atomic<std::uint16_t> port{0};
  std::latch listening(threads);
  std::vector<std::thread> workers;
  for (int i = 0; i < threads; ++i) {
    workers.emplace_back([&, i] {
      core& c = *cores[static_cast<std::size_t>(i)];
      auto on_asio = sluice::asio::attach(c.ctx, c.loop);
      c.server = std::make_unique<sluice::net::server>(
          sluice::net::server_options{.reuse_port = true, .event_loop = &c.loop});
      c.server->on_connection([&c](sluice::net::socket& s) {
        ++c.served;
        s.pipe(s);
      });
      c.server->on(sluice::event::listening, [&] {
        if (i == 0) port = c.server->address()->port;
        listening.count_down();
      });
      // The first picks a free port; the others join it.
      if (i != 0) {
        while (port.load() == 0) std::this_thread::yield();
      }
      c.server->listen(port.load(), "127.0.0.1");
      c.ctx.run();  // returns once the server has closed
      c.server.reset();
    });
    if (i == 0) {
      while (port.load() == 0) std::this_thread::yield();
    }
  }
  listening.wait();

  // The client, on the main thread's own loop.
  int echoed = 0, wrong = 0;
  std::vector<std::unique_ptr<sluice::net::socket>> clients;
  for (int n = 0; n < connections; ++n) {
    auto s = sluice::net::connect(port.load(), "127.0.0.1");
    auto* raw = s.get();
    auto got = std::make_shared<std::string>();
    const std::string message = "hello " + std::to_string(n) + "\n";
    raw->on(sluice::event::connect, [raw, message] { raw->end(message); });
    raw->on(sluice::event::data, [got](std::string_view chunk) { got->append(chunk); });
    raw->on(sluice::event::end, [&, got, message] { ++(*got == message ? echoed : wrong); });
    clients.push_back(std::move(s));
  }
  sluice::loop::current().run();

  // Each server closes on its own thread: post() is the one cross-thread call.
  for (auto& c : cores) c->loop.post([p = c.get()] { p->server->close(); });
  for (auto& w : workers) w.join();
  int served = 0;
  for (auto& c : cores) served += c->served;
  std::printf("%d echoes right, %d wrong\n", echoed, wrong);
  std::printf("%d connections served by %d threads, one io_context and one loop each\n", served, threads);
  return echoed == connections && wrong == 0 && served == connections ? 0 : 1;
}
