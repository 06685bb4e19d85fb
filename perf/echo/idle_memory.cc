// idle_memory: what an idle connection costs. N connections over loopback,
// both ends in this process: each client writes SIZE bytes once, the server
// echoes them, and the connection then stays open and quiet. Measured over a
// baseline taken after a warm-up round (so that what a loop keeps once, its
// read buffer and its block pool, is not charged to the sockets): heap in
// use (glibc's mallinfo2(): uordblks + hblkhd, which counts malloc's mmapped
// blocks too) and RSS (/proc/self/statm), per socket, both ends counted
// (2N sockets). The Node peer is idle_memory.js; idle-memory-compare.sh runs
// both.
//
//   idle_memory --connections N [--size 100] [--in-flight 256]
//
// Prints one line: {"impl":"sluice","connections":N,"sockets":2N,
// "heap_per_socket":B,"rss_per_socket":B}.
#include <malloc.h>
#include <unistd.h>

#include <chrono>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "sluice/loop/loop.h"
#include "sluice/net/server.h"
#include "sluice/net/socket.h"

namespace {

struct usage {
  double heap;
  double rss;
};

usage now() {
  const struct mallinfo2 m = ::mallinfo2();
  long pages = 0, resident = 0;
  if (FILE* f = std::fopen("/proc/self/statm", "r")) {
    if (std::fscanf(f, "%ld %ld", &pages, &resident) != 2) resident = 0;
    std::fclose(f);
  }
  return {static_cast<double>(m.uordblks + m.hblkhd), static_cast<double>(resident) * ::sysconf(_SC_PAGESIZE)};
}

// N clients, at most `in_flight` of them connecting or echoing at once (a
// burst of thousands of SYNs would overflow the listen backlog). done() is
// called once every client has its echo back.
class clients {
 public:
  clients(std::uint16_t port, std::size_t n, std::size_t size, std::size_t in_flight)
      : port_(port), n_(n), payload_(size, 'x'), in_flight_(in_flight) {
    sockets_.reserve(n);
  }
  template <class F>
  void run(F&& done) {
    done_ = std::forward<F>(done);
    for (std::size_t i = 0; i < in_flight_ && sockets_.size() < n_; ++i) start_one();
  }
  void close_all() {
    for (auto& s : sockets_) s->destroy();
  }

 private:
  void start_one() {
    auto s = sluice::net::connect(port_, "127.0.0.1");
    sluice::net::socket* c = s.get();
    sockets_.push_back(std::move(s));
    auto got = std::make_shared<std::size_t>(0);
    c->on(sluice::event::error, [](std::error_code ec) {
      std::fprintf(stderr, "idle_memory: client: %s\n", ec.message().c_str());
      std::exit(1);
    });
    c->on(sluice::event::connect, [this, c] { c->write(payload_); });
    c->on(sluice::event::data, [this, got](std::string_view chunk) {
      *got += chunk.size();
      if (*got != payload_.size()) return;
      if (sockets_.size() < n_) start_one();
      if (++echoed_ == n_) done_();
    });
  }

  std::uint16_t port_;
  std::size_t n_;
  std::string payload_;
  std::size_t in_flight_;
  std::size_t echoed_ = 0;
  std::vector<std::unique_ptr<sluice::net::socket>> sockets_;
  std::function<void()> done_;
};

}  // namespace

int main(int argc, char** argv) {
  std::size_t connections = 1000, size = 100, in_flight = 256;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::size_t v = std::strtoull(argv[i + 1], nullptr, 10);
    if (std::strcmp(argv[i], "--connections") == 0)
      connections = v;
    else if (std::strcmp(argv[i], "--size") == 0)
      size = v;
    else if (std::strcmp(argv[i], "--in-flight") == 0)
      in_flight = v;
    else {
      std::fprintf(stderr, "usage: idle_memory --connections N [--size 100] [--in-flight 256]\n");
      return 2;
    }
  }
  auto& l = sluice::loop::current();
  sluice::net::server srv;
  srv.on_connection([](sluice::net::socket& s) {
    s.on(sluice::event::error, [](std::error_code) {});
    s.on(sluice::event::data, [&s](std::string_view chunk) { s.write(chunk); });
  });
  srv.on(sluice::event::error, [](std::error_code ec) {
    std::fprintf(stderr, "idle_memory: server: %s\n", ec.message().c_str());
    std::exit(1);
  });
  std::unique_ptr<clients> warm, measured;
  usage base{};
  const auto settle = std::chrono::milliseconds(200);
  srv.on(sluice::event::listening, [&] {
    const auto port = srv.address()->port;
    // The warm-up: as many connections as run at once later, echoed and closed.
    warm = std::make_unique<clients>(port, in_flight, size, in_flight);
    warm->run([&, port] {
      warm->close_all();
      l.set_timeout(settle, [&, port] {
        warm.reset();
        base = now();
        measured = std::make_unique<clients>(port, connections, size, in_flight);
        measured->run([&] {
          l.set_timeout(settle, [&] {
            const usage after = now();
            const double sockets = 2.0 * static_cast<double>(connections);
            std::printf(
                "{\"impl\":\"sluice\",\"connections\":%zu,\"sockets\":%.0f,\"heap_per_socket\":%.0f,"
                "\"rss_per_socket\":%.0f}\n",
                connections, sockets, (after.heap - base.heap) / sockets, (after.rss - base.rss) / sockets);
            std::fflush(stdout);
            std::_Exit(0);  // closing 2N sockets one by one is not what is measured
          });
        });
      });
    });
  });
  srv.listen(0, "127.0.0.1");
  l.run();
}
