// The sluice side of the differential test (tests/net/differential.sh):
// peer.mjs's scenarios, played on sluice's net::server and net::socket,
// printing the same events in the same words.
//
//   net_peer server SCENARIO PORTFILE   (writes the port to PORTFILE)
//   net_peer client SCENARIO PORT
#include <chrono>
#include <cstdio>
#include <fstream>
#include <memory>
#include <string>
#include <string_view>

#include "sluice/errors.h"
#include "sluice/loop.h"
#include "sluice/net/server.h"
#include "sluice/net/socket.h"

namespace {

using namespace std::chrono_literals;
using sluice::event;
using sluice::net::socket;

void out(const std::string& line) {
  std::fputs((line + "\n").c_str(), stdout);
  std::fflush(stdout);
}

void record(socket& s, const std::string& who) {
  s.on(event::connect, [who] { out(who + " connect"); });
  s.on(event::ready, [who] { out(who + " ready"); });
  s.on(event::data, [who](std::string_view d) { out(who + " data " + std::string(d)); });
  s.on(event::end, [who] { out(who + " end"); });
  s.on(event::finish, [who] { out(who + " finish"); });
  s.on(event::timeout, [who] { out(who + " timeout"); });
  s.on(event::error, [who](std::error_code ec) { out(who + " error " + sluice::code_name(ec)); });
  s.on(event::close, [who](const sluice::event_arg& a) { out(who + " close " + (a.error ? "true" : "false")); });
}

sluice::write_cb cb(const std::string& who) {
  return [who](std::error_code ec) { out(who + " write-cb " + (ec ? sluice::code_name(ec) : "ok")); };
}

// What the server does with its one connection.
void serve(const std::string& scenario, socket& s) {
  if (scenario == "half-close") {
    auto got = std::make_shared<std::string>();
    s.on(event::data, [got](std::string_view d) { *got += d; });
    s.on(event::end, [&s, got] { s.end("got:" + *got, cb("server")); });
  } else if (scenario == "server-ends-first") {
    s.end("hello", cb("server"));
  } else if (scenario == "reset") {
    s.on(event::data, [&s](std::string_view) { s.reset_and_destroy(); });
  } else if (scenario == "timeout") {
    s.set_timeout(50ms);
    s.on(event::timeout, [&s] {
      s.set_timeout(0ms);
      s.end("idle", cb("server"));
    });
  } else if (scenario == "server-close") {
    s.on(event::data, [&s](std::string_view d) { s.write(d, cb("server")); });
  }
}

int run_server(const std::string& scenario, const std::string& portfile) {
  sluice::net::server_options o;
  o.connection.allow_half_open = scenario == "half-close";
  sluice::net::server srv(o);
  srv.on(event::listening, [&] {
    out("server listening");
    std::ofstream(portfile) << srv.address()->port;
  });
  srv.on_connection([&](socket& s) {
    out("server connection");
    record(s, "server");
    srv.close();  // one connection a run; 'close' once it has closed
    serve(scenario, s);
  });
  srv.on(event::close, [] { out("server close"); });
  srv.listen(0, "127.0.0.1");
  sluice::loop::current().run();
  return 0;
}

int run_client(const std::string& scenario, std::uint16_t port) {
  std::unique_ptr<socket> c, late;
  sluice::net::socket_options o;
  o.allow_half_open = scenario == "server-ends-first";
  c = sluice::net::connect(port, "127.0.0.1", o);
  record(*c, "client");
  if (scenario == "half-close") {
    c->on(event::connect, [&] { c->end("ping", cb("client")); });
  } else if (scenario == "server-ends-first") {
    c->on(event::end, [&] { c->end("late", cb("client")); });
  } else if (scenario == "reset") {
    c->on(event::connect, [&] { c->write("x", cb("client")); });
  } else if (scenario == "timeout") {
    c->on(event::data, [](std::string_view) {});
  } else if (scenario == "server-close") {
    c->on(event::connect, [&] { c->write("a", cb("client")); });
    c->once(event::data, [&] {
      // The server has stopped listening: this one is refused.
      late = sluice::net::connect(port, "127.0.0.1");
      record(*late, "late");
      late->on(event::close, [&] { c->end(); });
    });
  }
  sluice::loop::current().run();
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 4) {
    std::fprintf(stderr, "usage: net_peer server SCENARIO PORTFILE | client SCENARIO PORT\n");
    return 2;
  }
  const std::string role = argv[1], scenario = argv[2];
  if (role == "server") return run_server(scenario, argv[3]);
  return run_client(scenario, static_cast<std::uint16_t>(std::stoi(argv[3])));
}
