// sluice-log's DEST and the option values only its network destinations
// take: syslog facility and severity names (durations: args.h).
#pragma once

#include <arpa/inet.h>
#include <sys/un.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "args.h"

namespace sluice_tools {

struct log_destination {
  enum class kind { file, syslog_tcp, syslog_unix, syslog_tls, relp_tcp, relp_tls, kafka };
  kind type = kind::file;
  std::string file;  // file; the socket's path for syslog_unix
  std::string host;  // syslog_tcp, syslog_tls, relp_tcp, relp_tls: a name or an IP literal, without brackets
  std::uint16_t port = 0;
  std::string brokers;  // kafka: "host:port,host:port" (bootstrap.servers)
  std::string topic;
  bool network() const noexcept { return type != kind::file; }
};

// The HOST:PORT after `scheme` in `d`, into out.host and out.port (args.h's
// parser, as every tool's).
inline bool parse_host_port(std::string_view scheme, const std::string& d, log_destination& out, std::string& why) {
  return parse_host_port(std::string(scheme), d.substr(scheme.size()), out.host, out.port, 1, why);
}

// DEST: syslog://HOST:PORT, syslog+unix:PATH, syslog+tls://HOST:PORT, relp://HOST:PORT,
// relp+tls://HOST:PORT,
// kafka://BROKER[,BROKER]/TOPIC,
// or else a file. On a malformed network DEST, false and `why` says what is
// wrong. A HOST is a name or an IP address (IPv6 in brackets); a name is
// looked up at each connection, off the loop.
inline bool parse_log_destination(const std::string& d, log_destination& out, std::string& why) {
  auto starts = [&](std::string_view p) { return d.rfind(p, 0) == 0; };
  if (starts("syslog+unix:")) {
    out.type = log_destination::kind::syslog_unix;
    out.file = d.substr(12);
    if (out.file.rfind("//", 0) == 0) out.file.erase(0, 2);  // syslog+unix:///run/x.sock
    if (out.file.empty()) return why = "syslog+unix: wants a socket path: syslog+unix:PATH", false;
    if (out.file.size() >= sizeof(sockaddr_un::sun_path))
      return why = "syslog+unix: the path is longer than a Unix socket's " +
                   std::to_string(sizeof(sockaddr_un::sun_path) - 1) + " bytes",
             false;
    return true;
  }
  if (starts("syslog://")) {
    out.type = log_destination::kind::syslog_tcp;
    return parse_host_port("syslog://", d, out, why);
  }
  if (starts("syslog+tls://")) {
    out.type = log_destination::kind::syslog_tls;
    return parse_host_port("syslog+tls://", d, out, why);
  }
  if (starts("relp+tls://")) {
    out.type = log_destination::kind::relp_tls;
    return parse_host_port("relp+tls://", d, out, why);
  }
  if (starts("relp://")) {
    out.type = log_destination::kind::relp_tcp;
    return parse_host_port("relp://", d, out, why);
  }
  if (starts("kafka://")) {
    out.type = log_destination::kind::kafka;
    const std::string rest = d.substr(8);
    const std::size_t slash = rest.find('/');
    if (slash == std::string::npos || slash == 0 || slash + 1 == rest.size())
      return why = "kafka:// wants BROKER[,BROKER...]/TOPIC, got '" + d + "'", false;
    out.brokers = rest.substr(0, slash);
    out.topic = rest.substr(slash + 1);
    // Kafka's own rule for topic names (legal characters, at most 249).
    if (out.topic.size() > 249 || out.topic == "." || out.topic == ".." ||
        out.topic.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-") !=
            std::string::npos)
      return why = "kafka:// wants a TOPIC of letters, digits, '.', '_' and '-' (at most 249), got '" + out.topic +
                   "'",
             false;
    return true;
  }
  if (starts("syslog:") || starts("kafka:") || starts("syslog+") || starts("relp:"))
    return why = "'" + d + "' is not a destination: syslog://HOST:PORT, syslog+unix:PATH, syslog+tls://HOST:PORT, " +
                 "relp://HOST:PORT, relp+tls://HOST:PORT or " +
                 "kafka://BROKER[,BROKER...]/TOPIC (a file of that name: ./" + d + ")",
           false;
  out.type = log_destination::kind::file;
  out.file = d;
  return true;
}

// A syslog facility (RFC 5424's names as logger(1) takes them, or 0 to 23)
// or severity (emerg .. debug, or 0 to 7), or false.
inline bool parse_syslog_facility(const std::string& s, unsigned& out) {
  static constexpr std::array<std::string_view, 12> names = {
      "kern", "user", "mail", "daemon", "auth", "syslog", "lpr", "news", "uucp", "cron", "authpriv", "ftp"};
  std::uint64_t v = 0;
  if (parse_size(s.c_str(), false, 23, v)) return out = static_cast<unsigned>(v), true;
  for (unsigned i = 0; i < names.size(); ++i)
    if (s == names[i]) return out = i, true;
  if (s == "security") return out = 4, true;  // logger's alias of auth
  if (s.size() == 6 && s.rfind("local", 0) == 0 && s[5] >= '0' && s[5] <= '7')
    return out = 16 + static_cast<unsigned>(s[5] - '0'), true;
  return false;
}

inline bool parse_syslog_severity(const std::string& s, unsigned& out) {
  static constexpr std::array<std::string_view, 8> names = {"emerg",   "alert",  "crit", "err",
                                                            "warning", "notice", "info", "debug"};
  std::uint64_t v = 0;
  if (parse_size(s.c_str(), false, 7, v)) return out = static_cast<unsigned>(v), true;
  for (unsigned i = 0; i < names.size(); ++i)
    if (s == names[i]) return out = i, true;
  if (s == "panic") return out = 0, true;  // logger's aliases
  if (s == "error") return out = 3, true;
  if (s == "warn") return out = 4, true;
  return false;
}

}  // namespace sluice_tools
