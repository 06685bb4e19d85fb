// sluice's TLS echo server for tls-echo-compare.sh: every connection pipes
// into itself. Prints "listening on PORT", then, at the first connection,
// "cipher NAME PROTOCOL" (what the client and the server agreed on, so that
// a comparison can show that its servers run the same one).
//
// With --asio the loop is run by a Boost.Asio io_context (sluice/asio/attach.h),
// whose engine waits on the connections in one epoll set, where the loop's
// own run() calls poll() over all of them at every turn: the same TLS code
// on the other wait, to measure what the wait costs.
//
//   sluice_tls_echo_server [--asio] DIR     (DIR holds server.key and server.crt)
#include <utility>  // before Asio: Boost 1.74 with g++ 12's C++20

#include <boost/asio/io_context.hpp>
#include <cstdio>
#include <cstring>
#include <string>

#include "sluice/asio/attach.h"
#include "sluice/loop/loop.h"
#include "sluice/tls/server.h"

int main(int argc, char** argv) {
  const bool on_asio = argc == 3 && std::strcmp(argv[1], "--asio") == 0;
  if (argc != 2 && !on_asio) {
    std::fprintf(stderr, "usage: sluice_tls_echo_server [--asio] DIR\n");
    return 2;
  }
  const std::string dir = argv[argc - 1];
  auto& loop = sluice::loop::current();
  boost::asio::io_context ctx(1);
  sluice::asio::attachment attached;
  if (on_asio) attached = sluice::asio::attach(ctx, loop);
  sluice::tls::server_options o;
  o.context.key_file = dir + "/server.key";
  o.context.cert_file = dir + "/server.crt";
  sluice::tls::server srv(o);
  bool told = false;
  srv.on_secure_connection([&](sluice::tls::socket& s) {
    if (!told) {
      told = true;
      std::printf("cipher %s %s\n", s.cipher().c_str(), s.protocol().c_str());
      std::fflush(stdout);
    }
    s.tcp().set_no_delay();
    s.pipe(s);
  });
  srv.on(sluice::event::listening, [&] {
    std::printf("listening on %u\n", srv.address()->port);
    std::fflush(stdout);
  });
  srv.listen(0, "127.0.0.1");
  loop.run();  // attached: runs the io_context
}
