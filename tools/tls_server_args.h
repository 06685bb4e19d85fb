// The options of a tool that serves TLS (sluice-logd, sluice-fanout):
// --listen-tls HOST:PORT (repeatable), --tls-cert FILE, --tls-key FILE and
// --tls-client-ca FILE, checked and said the same way by each, and the
// tls::server_options they make. Each tool keeps its own getopt cases;
// what they share is here:
//
//   case listen_tls: sluice_tools::add_listen_tls(this_tool, o.tls, arg); break;
//   case tls_cert: o.tls.cert = arg; break;
//   ...
//   sluice_tools::check_tls_server_args(this_tool, o.tls);  // after the loop
//
// A tool built with OpenSSL defines SLUICE_TOOL_TLS (tools/meson.build)
// and links libsluice-tls; without it, --listen-tls is bad usage.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "args.h"
#include "systemd.h"
#include "tls_files.h"
#include "tool.h"
#if SLUICE_TOOL_TLS
#include "sluice/net/server.h"
#include "sluice/tls/server.h"
#endif

namespace sluice_tools {

struct tls_server_args {
  std::vector<std::string> listen;  // --listen-tls, HOST:PORT or fd:NAME each
  std::string cert, key, client_ca;

  bool enabled() const noexcept { return !listen.empty(); }
};

// --listen-tls ARG: HOST:PORT (the port itself is the tool's to check, as
// for its --listen), or fd:NAME, a socket systemd passed (systemd.h); bad
// usage in a build without TLS.
inline void add_listen_tls(const tool& t, tls_server_args& a, const std::string& arg) {
#if !SLUICE_TOOL_TLS
  (void)a;
  (void)arg;
  t.usage_error("--listen-tls: not built with TLS (it needs OpenSSL at build time: libssl-dev, -Dtls)");
#else
  if (arg.rfind("unix:", 0) == 0) t.usage_error("--listen-tls wants HOST:PORT, not a Unix socket, got '" + arg + "'");
  if (systemd::is_passed(arg)) {
    systemd::check_passed(t, "--listen-tls", arg);
    a.listen.push_back(arg);
    return;
  }
  std::string host, why;
  std::uint16_t port = 0;
  if (!parse_host_port("--listen-tls", arg, host, port, 0, why)) t.usage_error(why);
  a.listen.push_back(arg);
#endif
}

// After every option is read: the --tls-* options go with --listen-tls,
// which needs a certificate and a key; each file can be read; a key that
// its group or others may read is used, with a warning.
inline void check_tls_server_args(const tool& t, const tls_server_args& a) {
  if (!a.enabled()) {
    if (!a.cert.empty() || !a.key.empty() || !a.client_ca.empty())
      t.usage_error("--tls-cert, --tls-key and --tls-client-ca go with --listen-tls");
    return;
  }
  if (a.cert.empty()) t.usage_error("--listen-tls needs --tls-cert FILE");
  if (a.key.empty()) t.usage_error("--listen-tls needs --tls-key FILE");
  // Said now, with the reason, as bad usage, not later as a failure to
  // listen.
  for (const auto& [opt, path] : {std::pair{"--tls-cert", &a.cert}, std::pair{"--tls-key", &a.key},
                                  std::pair{"--tls-client-ca", &a.client_ca}})
    if (!path->empty())
      if (auto problem = tls_file_problem(opt, *path); !problem.empty()) t.usage_error(problem);
  warn_if_key_shared(t.name, "--tls-key", a.key);
}

// The longest a --listen-tls connection may take to finish its handshake,
// unless --idle-timeout is shorter: an honest client needs a few round
// trips, and one that sends nothing must not hold a connection for long.
constexpr std::chrono::milliseconds tls_handshake_bound{10000};

#if SLUICE_TOOL_TLS
// The tls::server of every --listen-tls address: the certificate and key,
// and with --tls-client-ca a client certificate of that CA required (one
// without it is cut off in the handshake, before anything it sent is
// read, or anything is sent to it). `listener` is the tool's own
// net::server_options: its limits and the connections' options; with its
// max_connections, the secure connections are counted apart from those in
// their handshake, at most as many, the oldest making room for a new one
// (tls::server_options::max_handshakes). The handshake has
// tls_handshake_bound, or `idle_timeout` (zero: none) when shorter.
inline sluice::tls::server_options make_tls_server_options(const tls_server_args& a,
                                                           const sluice::net::server_options& listener,
                                                           std::chrono::milliseconds idle_timeout) {
  sluice::tls::server_options to;
  to.handshake_timeout = idle_timeout.count() > 0 ? std::min(tls_handshake_bound, idle_timeout) : tls_handshake_bound;
  to.context.cert_file = a.cert;
  to.context.key_file = a.key;
  to.context.ca_file = a.client_ca;
  to.request_cert = !a.client_ca.empty();
  to.reject_unauthorized = true;
  to.listener = listener;
  to.connection = listener.connection;
  return to;
}
#endif

}  // namespace sluice_tools
