// sluice-log's DEST and the option values only its network destinations
// take: syslog facility and severity names, and durations.
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

// The HOST:PORT after `scheme` in `d`, into out.host and out.port.
inline bool parse_host_port(std::string_view scheme, const std::string& d, log_destination& out, std::string& why) {
  const std::string name(scheme);
  const std::string rest = d.substr(scheme.size());
  const std::size_t colon = rest.rfind(':');
  if (colon == std::string::npos || colon == 0) return why = name + " wants HOST:PORT, got '" + d + "'", false;
  std::string host = rest.substr(0, colon);
  const bool bracketed = host.size() >= 2 && host.front() == '[' && host.back() == ']';
  if (bracketed) host = host.substr(1, host.size() - 2);
  unsigned char addr[16];
  // A name is looked up by the socket, off the loop (net::lookup()).
  const bool host_name = !host.empty() && host.size() <= 253 && host.front() != '-' && host.front() != '.' &&
                         std::all_of(host.begin(), host.end(), [](unsigned char c) {
                           return std::isalnum(c) || c == '-' || c == '.' || c == '_';
                         });
  const bool ok = bracketed ? ::inet_pton(AF_INET6, host.c_str(), addr) == 1
                            : ::inet_pton(AF_INET, host.c_str(), addr) == 1 || host_name;
  if (!ok)
    return why = name + " wants a host name or an IP address ([...] for IPv6) as HOST, got '" + host + "'", false;
  std::uint64_t port = 0;
  if (!parse_size(rest.c_str() + colon + 1, false, 65535, port) || port == 0)
    return why = name + " wants a port from 1 to 65535, got '" + rest.substr(colon + 1) + "'", false;
  out.host = host;
  out.port = static_cast<std::uint16_t>(port);
  return true;
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

// A duration: a whole number with ms, s (the default) or m, up to a day.
inline bool parse_duration(const std::string& s, std::chrono::milliseconds& out) {
  if (s.empty() || s[0] < '0' || s[0] > '9') return false;
  errno = 0;
  char* end = nullptr;
  const std::uint64_t v = std::strtoull(s.c_str(), &end, 10);
  if (errno || v > 86'400'000) return false;
  const std::string_view unit(end);
  std::uint64_t ms;
  if (unit == "ms") ms = v;
  else if (unit.empty() || unit == "s") ms = v * 1000;
  else if (unit == "m") ms = v * 60'000;
  else return false;
  if (ms > 86'400'000) return false;
  out = std::chrono::milliseconds(ms);
  return true;
}

}  // namespace sluice_tools
