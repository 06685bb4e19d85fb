// sluice-logd's options, as parse_args() (sluice_logd.cc) makes them from
// the command line and each loop's logd (logd/logd.cc) reads them.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "args.h"
#include "logd/relay_output.h"
#include "metrics_server.h"
#include "tls_server_args.h"
#include "tool.h"
#include "sluice/sluice.h"

namespace sluice_tools {

// sluice-logd's name and --help (sluice_logd.cc): bad usage found once
// running (a --forward setting librdkafka refuses, a --listen port) is
// said as the command line's is.
extern const tool logd_tool;

struct logd_options {
  std::vector<std::string> listen;
  std::vector<std::string> listen_relp;  // HOST:PORT
  tls_server_args tls;     // --listen-tls, --tls-*
  sluice::syslog_frame_reader::mode framing = sluice::syslog_frame_reader::mode::automatic;
  std::size_t max_message = default_max_message;
  std::string file;  // FILE; on a relay the next hops' name (relay_name()), which messages give
  relay_settings relay;  // --forward, --window, --give-up-after, --forward-tls-*
  sluice::log_options log;
  bool stats = false;
  bool json = false;
  sluice::net::server_options server;  // --socket-mode, --socket-group
  bool exit_on_full = false;                      // --on-full exit
  std::optional<std::chrono::milliseconds> grace;  // --grace
  std::string grace_text;
  std::optional<std::size_t> max_connections;
  std::chrono::milliseconds idle_timeout{0};
  std::string idle_text;
  metrics_args metrics;  // --metrics
  unsigned threads = 1;  // --threads: event loops, each accepting and reading its own connections
};

// HOST:PORT, IPv6 in brackets (args.h's parser, as every tool's); a bad one
// is bad usage.
inline std::pair<std::string, std::uint16_t> host_port(const std::string& addr, const char* opt) {
  std::pair<std::string, std::uint16_t> hp;
  std::string why;
  if (!parse_host_port(opt, addr, hp.first, hp.second, 0, why)) logd_tool.usage_error(why);
  return hp;
}

}  // namespace sluice_tools
