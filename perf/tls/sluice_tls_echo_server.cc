// sluice's TLS echo server for tls-echo-compare.sh: every connection pipes
// into itself. Prints "listening on PORT".
//
//   sluice_tls_echo_server DIR     (DIR holds server.key and server.crt)
#include <cstdio>
#include <string>

#include "sluice/loop/loop.h"
#include "sluice/tls/server.h"

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: sluice_tls_echo_server DIR\n");
    return 2;
  }
  const std::string dir = argv[1];
  sluice::tls::server_options o;
  o.context.key_file = dir + "/server.key";
  o.context.cert_file = dir + "/server.crt";
  sluice::tls::server srv(o);
  srv.on_secure_connection([](sluice::tls::socket& s) {
    s.tcp().set_no_delay();
    s.pipe(s);
  });
  srv.on(sluice::event::listening, [&] {
    std::printf("listening on %u\n", srv.address()->port);
    std::fflush(stdout);
  });
  srv.listen(0, "127.0.0.1");
  sluice::loop::current().run();
}
