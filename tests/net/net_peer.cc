// The sluice side of the differential test (tests/net/differential.sh):
// peer.mjs's scenarios, played on sluice's net::server and net::socket,
// printing the same events in the same words.
//
//   net_peer server SCENARIO PORTFILE   (writes the port to PORTFILE)
//   net_peer client SCENARIO PORT
//   net_peer local SCENARIO              (one process: peer.mjs's `local`)
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <memory>
#include <string>
#include <string_view>

#include "sluice/asio/attach.h"
#include "sluice/base/errors.h"
#include "sluice/loop/loop.h"
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
  // The others (issue 26's items 1-3) only record what arrives.
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
  } else if (scenario == "connect-write-destroy") {
    c->on(event::connect, [&] {
      c->write("a", cb("client"));
      c->destroy();
    });
  } else if (scenario == "held-write-destroy") {
    c->write("a", cb("client"));
    c->on(event::connect, [&] { c->destroy(); });
  } else if (scenario == "end-then-bad-write") {
    c->on(event::connect, [&] {
      c->end("a", cb("end"));
      c->write("b", cb("late"));
    });
  } else if (scenario == "connect-destroy") {
    c->destroy();
    c->on(event::close, [&, port] {
      late = sluice::net::connect(port, "127.0.0.1");
      record(*late, "second");
      late->on(event::connect, [&] { late->end("second", cb("second")); });
    });
  } else if (scenario == "reset-connecting") {
    c->reset_and_destroy();
  }
  sluice::loop::current().run();
  return 0;
}

// ---- one process: `local` scenarios (peer.mjs's `local`)

// A port nobody listens on: bound, then closed.
std::uint16_t refused_port() {
  std::uint16_t port = 0;
  {
    sluice::net::server probe;
    probe.listen(0, "127.0.0.1");
    port = probe.address()->port;
  }
  return port;
}

// Node's 'lookup' (err, address, family, host), for 127.0.0.1 and errors only.
void lookups(socket& s, const std::string& who) {
  s.on(event::lookup, [who](const sluice::event_arg& a) {
    const auto* e = static_cast<const sluice::net::lookup_event*>(a.source);
    if (!a.error && a.chunk != "127.0.0.1") return;
    out(who + " lookup " + (a.error ? sluice::code_name(a.error) : "null") + " " +
        (a.error ? "-" : std::string(a.chunk)) + " " + (a.error ? "-" : std::to_string(e->family)) + " " +
        std::string(e->host));
  });
}

std::string ok_or(std::error_code ec) { return ec ? sluice::code_name(ec) : "ok"; }
const char* boolean(bool b) { return b ? "true" : "false"; }

int run_local(const std::string& scenario) {
  auto& loop = sluice::loop::current();
  std::unique_ptr<socket> c;
  std::unique_ptr<sluice::net::server> srv, again;
  const auto serve = [&](auto on_connection, auto then) {
    srv = std::make_unique<sluice::net::server>();
    srv->on_connection(on_connection);
    srv->on(event::listening, [&, then] { then(srv->address()->port); });
    srv->listen(0, "127.0.0.1");
  };
  // A second server on the first one's port: EADDRINUSE with no 'error'
  // listener, which ends the program (exit 1) before "still running".
  const auto listen_twice = [&] {
    srv = std::make_unique<sluice::net::server>();
    srv->on(event::listening, [&] {
      out("listening");
      again = std::make_unique<sluice::net::server>();
      again->listen(srv->address()->port, "127.0.0.1");
      loop.set_timeout(200ms, [&] {
        out("still running");
        srv->close();
      });
    });
    srv->listen(0, "127.0.0.1");
  };
  if (scenario == "refused-writes") {
    c = sluice::net::connect(refused_port(), "127.0.0.1");
    record(*c, "client");
    c->write("a", cb("w1"));
    c->write("b", cb("w2"));
    c->end(cb("end"));
  } else if (scenario == "destroy-error-writes") {
    c = sluice::net::connect(refused_port(), "127.0.0.1");
    record(*c, "client");
    c->write("a", cb("w1"));
    c->write("b", cb("w2"));
    c->destroy(std::error_code(EPIPE, std::system_category()));
  } else if (scenario == "destroy-error-inflight") {
    serve([&](socket& s) {
      s.on(event::data, [](std::string_view) {});
      s.on(event::error, [] {});
      s.on(event::close, [&] { srv->close(); });
    }, [&](std::uint16_t port) {
      c = sluice::net::connect(port, "127.0.0.1");
      record(*c, "client");
      c->on(event::connect, [&] {
        c->write(std::string(8 << 20, 'a'));
        loop.set_immediate([&] {
          c->write("b", cb("w2"));
          c->write("c", cb("w3"));
          loop.next_tick([] { out("tick after destroy"); });
          c->destroy(std::error_code(EPIPE, std::system_category()));
        });
      });
    });
  } else if (scenario == "addresses-after-close") {
    serve([&](socket& s) {
      s.on(event::end, [&s] { s.end(); });
      s.on(event::close, [&] { srv->close(); });
    }, [&](std::uint16_t port) {
      c = sluice::net::connect(port, "127.0.0.1");
      const auto show = [&, port](const std::string& when) {
        const bool has_local = !c->local_address().empty();
        out(when + " local " + (has_local ? c->local_address() : "-") + " " + boolean(c->local_port() > 0) + " " +
            (c->local().family.empty() ? "-" : c->local().family) + " remote " + c->remote_address() + " " +
            boolean(c->remote_port() == port) + " " + c->remote().family);
      };
      c->on(event::connect, [&, show] {
        show("connect");
        c->end();
      });
      c->on(event::close, [show] { show("close"); });
    });
  } else if (scenario == "listen-order") {
    srv = std::make_unique<sluice::net::server>();
    srv->listen(0, "127.0.0.1");
    loop.next_tick([] { out("tick after listen"); });
    srv->on(event::listening, [&] {
      out("listening");
      again = std::make_unique<sluice::net::server>();
      again->on(event::error, [&](std::error_code ec) {
        out("again error " + sluice::code_name(ec) + " listening " + boolean(again->listening()));
        srv->close();
      });
      again->listen(srv->address()->port, "127.0.0.1");
      loop.next_tick([] { out("tick after second listen"); });
    });
    srv->on(event::close, [] { out("close"); });
  } else if (scenario == "close-twice") {
    srv = std::make_unique<sluice::net::server>();
    srv->on(event::close, [] { out("close"); });
    srv->on(event::listening, [&] {
      srv->close([](std::error_code ec) { out("cb1 " + ok_or(ec)); });
      srv->close([](std::error_code ec) { out("cb2 " + ok_or(ec)); });
    });
    srv->listen(0, "127.0.0.1");
  } else if (scenario == "close-not-listening") {
    srv = std::make_unique<sluice::net::server>();
    srv->on(event::close, [] { out("close"); });
    srv->close([](std::error_code ec) { out("cb " + ok_or(ec)); });
  } else if (scenario == "unref-server") {
    srv = std::make_unique<sluice::net::server>();
    srv->on(event::listening, [&] {
      out("listening");
      srv->unref();
    });
    srv->listen(0, "127.0.0.1");
  } else if (scenario == "unref-connection") {
    serve([&](socket& s) {
      out("server connection");
      s.unref();
      srv->unref();
    }, [&](std::uint16_t port) {
      c = sluice::net::connect(port, "127.0.0.1");
      c->on(event::connect, [&] {
        out("client connect");
        c->unref();
      });
    });
  } else if (scenario == "ref-again") {
    srv = std::make_unique<sluice::net::server>();
    srv->unref();
    srv->ref();
    srv->on(event::listening, [&] {
      out("listening");
      loop.set_timeout(20ms, [&] {
        out("closing");
        srv->close();
      });
    });
    srv->listen(0, "127.0.0.1");
  } else if (scenario == "set-timeout-callback") {
    serve([&](socket& s) { s.on(event::close, [&] { srv->close(); }); }, [&](std::uint16_t port) {
      c = sluice::net::connect(port, "127.0.0.1");
      c->on(event::timeout, [] { out("timeout event"); });
      c->set_timeout(30ms, [&] {
        out("timeout callback");
        c->destroy();
      });
      c->on(event::close, [] { out("close"); });
    });
  } else if (scenario == "end-after-destroy-connecting" || scenario == "end-after-destroy-in-connect") {
    const bool in_connect = scenario == "end-after-destroy-in-connect";
    serve([](socket& s) { s.on(event::error, [] {}); }, [&, in_connect](std::uint16_t port) {
      c = sluice::net::connect(port, "127.0.0.1");
      record(*c, "client");
      c->on(event::close, [&] { srv->close(); });
      const auto go = [&] {
        c->write("a", cb("w"));
        c->destroy();
        c->end(cb("end"));
      };
      if (in_connect)
        c->on(event::connect, go);
      else
        go();
    });
  } else if (scenario == "lookup-localhost") {
    serve([](socket& s) { s.resume(); }, [&](std::uint16_t port) {
      c = sluice::net::connect(port, "localhost");
      lookups(*c, "client");
      record(*c, "client");
      c->on(event::connect, [&] { c->destroy(); });
      c->on(event::close, [&] { srv->close(); });
    });
  } else if (scenario == "lookup-not-found") {
    c = sluice::net::connect(refused_port(), "sluice-test.invalid");
    lookups(*c, "client");
    record(*c, "client");
    c->write("a", cb("w"));
  } else if (scenario == "lookup-destroy") {
    serve([](socket& s) { s.resume(); }, [&](std::uint16_t port) {
      c = sluice::net::connect(port, "localhost");
      lookups(*c, "client");
      record(*c, "client");
      c->write("a", cb("w"));
      c->on(event::close, [&] { srv->close(); });
      c->destroy();  // the lookup is on its way (a later turn may have its answer already)
    });
  } else if (scenario == "end-after-destroy-idle") {
    // Not called while the loop runs, as in Node; the socket's destructor
    // pays it (ERR_STREAM_DESTROYED: see net_test), after this trace.
    c = std::make_unique<socket>();
    record(*c, "client");
    c->destroy();
    c->end([](std::error_code) {});
  } else if (scenario == "is-ip") {
    for (const char* i : {"127.0.0.1", "::1", "x", "1.2.3.256", "01.2.3.4", "1.2.3", " 1.2.3.4", "::ffff:1.2.3.4",
                          "fe80::1%eth0", "fe80::1%", "2001:db8::1:2:3:4:5", "1::2::3", "localhost", ""}) {
      out(std::string("is_ip '") + i + "' " + std::to_string(sluice::net::is_ip(i)) + " " +
          boolean(sluice::net::is_ipv4(i)) + " " + boolean(sluice::net::is_ipv6(i)));
    }
  } else if (scenario == "unhandled-listen-error-asio") {
    // The same on an io_context (issue 19 item 17: such a program exited 0).
    boost::asio::io_context ctx;
    auto on_asio = sluice::asio::attach(ctx);
    listen_twice();
    ctx.run();
    return 0;
  } else if (scenario == "unhandled-listen-error") {
    listen_twice();
  } else {
    std::fprintf(stderr, "net_peer: no local scenario %s\n", scenario.c_str());
    return 2;
  }
  loop.run();
  if (scenario.starts_with("unref") || scenario == "ref-again") out("exit");
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc == 3 && std::string_view(argv[1]) == "local") return run_local(argv[2]);
  if (argc != 4) {
    std::fprintf(stderr, "usage: net_peer server SCENARIO PORTFILE | client SCENARIO PORT | local SCENARIO\n");
    return 2;
  }
  const std::string role = argv[1], scenario = argv[2];
  if (role == "server") return run_server(scenario, argv[3]);
  return run_client(scenario, static_cast<std::uint16_t>(std::stoi(argv[3])));
}
