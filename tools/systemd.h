// What the tools that serve (sluice-logd, sluice-fanout) do under systemd:
// serve the sockets a .socket unit passes them (--listen fd:NAME, socket
// activation: LISTEN_PID, LISTEN_FDS, LISTEN_FDNAMES), and tell the service
// manager how they are (sd_notify: READY=1, STOPPING=1, STATUS=, WATCHDOG=1).
// Both through libsystemd, when the build found it (-Dsystemd, which defines
// SLUICE_TOOL_SYSTEMD); without it fd:NAME is bad usage and nothing is sent.
//
//   case listen: if (sluice_tools::systemd::is_passed(arg)) sluice_tools::systemd::check_passed(this_tool, "--listen", arg);
//   ...
//   for (const auto& [addr, fd] : sluice_tools::systemd::listeners(o.listen)) ... server->listen(sluice::net::handle{fd});
//   notifier notify{[this] { return "12 messages, 3 connections"; }};
//   notify.ready();     // every listener is up
//   notify.stopping();  // SIGTERM
#pragma once

#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "sluice/loop/loop.h"
#include "sluice/net/address.h"
#include "tool.h"

namespace sluice_tools::systemd {

/// Whether an address option's value names a socket passed by systemd:
/// "fd:NAME", NAME as a socket unit's FileDescriptorName= sets it.
inline bool is_passed(const std::string& addr) { return addr.rfind("fd:", 0) == 0; }

/// For parse_args(): that `addr` ("fd:NAME", given to option `opt`) names
/// sockets systemd passed to this process, each a listening stream socket,
/// and that no other option took NAME before. Bad usage (exit 2) otherwise,
/// saying which names were passed, or why the socket cannot be served; and
/// in a build without libsystemd, that socket activation is not built in.
void check_passed(const tool& t, const std::string& opt, const std::string& addr);

/// The fds passed as `addr`'s NAME, one or more (a socket unit with
/// several ListenStream= passes them all under its one name), after
/// check_passed() said yes; the server that listens on one owns it.
std::vector<int> passed_fds(const std::string& addr);

/// What to listen on for an address option's values: each address with -1
/// (the tool listens on the address itself), and each fd:NAME once for
/// every fd passed as NAME.
inline std::vector<std::pair<std::string, int>> listeners(const std::vector<std::string>& addrs) {
  std::vector<std::pair<std::string, int>> all;
  for (const std::string& addr : addrs) {
    if (!is_passed(addr)) all.emplace_back(addr, -1);
    else
      for (const int fd : passed_fds(addr)) all.emplace_back(addr, fd);
  }
  return all;
}

/// What 'listening on' says of a passed socket: "fd:NAME (127.0.0.1:514)",
/// "fd:NAME (unix:/run/sluice/logd.sock)".
std::string describe_passed(const std::string& addr, const sluice::net::address_info& a);

/// sd_notify() for a tool's run: nothing at all when NOTIFY_SOCKET is unset
/// (or the build has no libsystemd). Its timers (WATCHDOG=1 every half
/// WATCHDOG_USEC, when that is set for this process; STATUS= every 2 s
/// when the counts changed) keep no loop going: the tool ends as without
/// them.
class notifier {
 public:
  /// `status` says the tool's counts, for STATUS= ("12 messages, ...").
  explicit notifier(std::function<std::string()> status);
  ~notifier();
  notifier(const notifier&) = delete;
  notifier& operator=(const notifier&) = delete;

  /// READY=1 with the first STATUS=, once: every listener is up (and the
  /// tool's FILE open).
  void ready();
  /// STOPPING=1 with the counts, once: the tool stops (SIGTERM).
  void stopping();

 private:
  void send(const std::string& state);
  void watchdog();
  void status_tick();

  std::function<std::string()> status_;
  std::string last_status_;
  sluice::loop* loop_ = nullptr;  // null: nothing is sent
  std::chrono::milliseconds watchdog_every_{0};
  bool ready_ = false;
  bool stopping_ = false;
};

}  // namespace sluice_tools::systemd
