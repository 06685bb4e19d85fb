// net_world: what the network tests share: one loop, the options that put
// sockets and servers on it, a log of the events they record, and the port
// a server listens on. A test's own world derives from it and adds its
// record() of the events it traces.
#pragma once

#include <doctest/doctest.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "sluice/loop/loop.h"
#include "sluice/net/server.h"
#include "sluice/net/socket.h"
#include "support/spin.h"

namespace sluice::test {

struct net_world {
  sluice::loop loop;
  std::vector<std::string> events;

  net::socket_options socket_opts() {
    net::socket_options o;
    o.event_loop = &loop;
    return o;
  }
  net::server_options server_opts() {
    net::server_options o;
    o.event_loop = &loop;
    o.connection.event_loop = &loop;
    return o;
  }

  bool has(const std::string& e) const { return std::find(events.begin(), events.end(), e) != events.end(); }
  bool has_prefix(const std::string& e) const {
    return std::any_of(events.begin(), events.end(), [&e](const std::string& x) { return x.rfind(e, 0) == 0; });
  }
  /// Where `e` was recorded first; events.size() when it was not.
  std::ptrdiff_t index(const std::string& e) const {
    return std::find(events.begin(), events.end(), e) - events.begin();
  }
  /// The events, a line each (for a failing CHECK's message).
  std::string all() const {
    std::string s;
    for (const auto& e : events) s += e + "\n";
    return s;
  }
};

/// The port a listening server (net::server, tls::server) is bound to.
template <class Server>
std::uint16_t port_of(const Server& s) {
  REQUIRE(s.address());
  return s.address()->port;
}

/// Whether `srv` echoes what `client` (connecting to it) sends: "ping",
/// back before the close. Sets an echoing 'connection' listener on `srv`.
inline bool echoes(net_world& w, net::server& srv, std::unique_ptr<net::socket> client) {
  srv.on_connection([](net::socket& s) {
    s.on(event::data, [&s](std::string_view c) { s.write(c); });
    s.on(event::end, [&s] { s.end(); });
  });
  std::string got;
  bool closed = false;
  client->on(event::data, [&](std::string_view d) { got += d; });
  client->on(event::close, [&] { closed = true; });
  client->end("ping");
  return spin(w.loop, [&] { return closed; }) && got == "ping";
}

}  // namespace sluice::test
