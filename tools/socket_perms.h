// socket_perms: --socket-mode MODE and --socket-group GROUP of sluice-logd
// and sluice-fanout: a Unix listener's permissions (net::server_options's
// unix_mode and unix_group), parsed alike in both tools.
#pragma once

#include <grp.h>
#include <sys/types.h>

#include <cerrno>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace sluice_tools {

/// An octal mode from 0 to 0777 ("660", "0660"); nothing for anything else.
inline std::optional<mode_t> parse_socket_mode(const std::string& s) {
  if (s.empty() || s.size() > 4) return std::nullopt;
  mode_t m = 0;
  for (const char c : s) {
    if (c < '0' || c > '7') return std::nullopt;
    m = static_cast<mode_t>(m * 8 + static_cast<mode_t>(c - '0'));
  }
  if (m > 0777) return std::nullopt;
  return m;
}

/// A group by name (looked up in the group database), or by number; nothing
/// for an unknown name or a number out of range.
inline std::optional<gid_t> parse_socket_group(const std::string& s) {
  if (s.empty()) return std::nullopt;
  if (s.find_first_not_of("0123456789") == std::string::npos) {
    if (s.size() > 10) return std::nullopt;
    const std::uint64_t g = std::stoull(s);
    if (g >= static_cast<gid_t>(-1)) return std::nullopt;  // -1 means "no change" to chown()
    return static_cast<gid_t>(g);
  }
  std::vector<char> buf(16384);
  group grp{};
  group* found = nullptr;
  while (::getgrnam_r(s.c_str(), &grp, buf.data(), buf.size(), &found) == ERANGE && buf.size() < (1u << 22))
    buf.resize(buf.size() * 2);
  if (found == nullptr) return std::nullopt;
  return found->gr_gid;
}

}  // namespace sluice_tools
