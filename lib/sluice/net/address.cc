#include "sluice/net/address.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/un.h>

#include <cerrno>
#include <cstring>

namespace sluice::net {

// Node's isIPv4/isIPv6 are regular expressions; inet_pton() accepts the same
// forms (dotted decimal without leading zeros; every IPv6 form, with an
// embedded IPv4 tail). Node's zone is one or more of [0-9a-zA-Z-.:].
int is_ip(std::string_view input) noexcept {
  char text[INET6_ADDRSTRLEN + 1];
  in6_addr scratch;
  if (input.size() <= INET_ADDRSTRLEN - 1) {
    std::memcpy(text, input.data(), input.size());
    text[input.size()] = '\0';
    if (::inet_pton(AF_INET, text, &scratch) == 1) return 4;
  }
  const std::size_t zone = input.find('%');
  if (zone != std::string_view::npos) {
    const std::string_view id = input.substr(zone + 1);
    if (id.empty()) return 0;
    for (const char c : id) {
      const bool ok = (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '-' ||
                      c == '.' || c == ':';
      if (!ok) return 0;
    }
    input = input.substr(0, zone);
  }
  if (input.size() > INET6_ADDRSTRLEN - 1) return 0;
  std::memcpy(text, input.data(), input.size());
  text[input.size()] = '\0';
  return ::inet_pton(AF_INET6, text, &scratch) == 1 ? 6 : 0;
}

}  // namespace sluice::net

namespace sluice::net::detail {

std::error_code tcp_address(std::string_view host, std::uint16_t port, sockaddr_any& out) noexcept {
  out = {};
  if (host == "localhost") host = "127.0.0.1";
  char text[INET6_ADDRSTRLEN + 1];
  if (host.size() >= sizeof text) return {EINVAL, std::system_category()};
  std::memcpy(text, host.data(), host.size());
  text[host.size()] = '\0';
  auto* v4 = reinterpret_cast<sockaddr_in*>(&out.storage);
  if (::inet_pton(AF_INET, text, &v4->sin_addr) == 1) {
    v4->sin_family = AF_INET;
    v4->sin_port = htons(port);
    out.length = sizeof(sockaddr_in);
    return {};
  }
  auto* v6 = reinterpret_cast<sockaddr_in6*>(&out.storage);
  if (::inet_pton(AF_INET6, text, &v6->sin6_addr) == 1) {
    v6->sin6_family = AF_INET6;
    v6->sin6_port = htons(port);
    out.length = sizeof(sockaddr_in6);
    return {};
  }
  return {EINVAL, std::system_category()};
}

std::error_code unix_address(std::string_view path, sockaddr_any& out) noexcept {
  out = {};
  auto* un = reinterpret_cast<sockaddr_un*>(&out.storage);
  if (path.empty() || path.size() >= sizeof un->sun_path) return {ENAMETOOLONG, std::system_category()};
  un->sun_family = AF_UNIX;
  std::memcpy(un->sun_path, path.data(), path.size());
  out.length = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + path.size() + 1);
  return {};
}

address_info describe(const sockaddr_any& a) {
  address_info info;
  char text[INET6_ADDRSTRLEN] = "";
  switch (a.family()) {
    case AF_INET: {
      const auto* v4 = reinterpret_cast<const sockaddr_in*>(&a.storage);
      ::inet_ntop(AF_INET, &v4->sin_addr, text, sizeof text);
      info = {text, "IPv4", ntohs(v4->sin_port)};
      break;
    }
    case AF_INET6: {
      const auto* v6 = reinterpret_cast<const sockaddr_in6*>(&a.storage);
      ::inet_ntop(AF_INET6, &v6->sin6_addr, text, sizeof text);
      info = {text, "IPv6", ntohs(v6->sin6_port)};
      break;
    }
    case AF_UNIX: {
      const auto* un = reinterpret_cast<const sockaddr_un*>(&a.storage);
      const std::size_t max = a.length > offsetof(sockaddr_un, sun_path) ? a.length - offsetof(sockaddr_un, sun_path) : 0;
      info = {std::string(un->sun_path, ::strnlen(un->sun_path, max)), "unix", 0};
      break;
    }
    default:
      break;
  }
  return info;
}

address_info local_address_of(int fd) {
  sockaddr_any a;
  a.length = sizeof a.storage;
  if (::getsockname(fd, a.get(), &a.length) != 0) return {};
  return describe(a);
}

address_info remote_address_of(int fd) {
  sockaddr_any a;
  a.length = sizeof a.storage;
  if (::getpeername(fd, a.get(), &a.length) != 0) return {};
  return describe(a);
}

peer_address peer_of(int fd, std::string& path) {
  sockaddr_any a;
  a.length = sizeof a.storage;
  peer_address out{};
  if (::getpeername(fd, a.get(), &a.length) != 0) return out;
  switch (a.family()) {
    case AF_INET:
      std::memcpy(&out.v4, &a.storage, sizeof out.v4);
      break;
    case AF_INET6:
      std::memcpy(&out.v6, &a.storage, sizeof out.v6);
      break;
    case AF_UNIX:
      out.family = AF_UNIX;
      path = describe(a).address;
      break;
    default:
      break;
  }
  return out;
}

address_info describe(const peer_address& a, std::string_view path) {
  sockaddr_any any;
  switch (a.family) {
    case AF_INET:
      std::memcpy(&any.storage, &a.v4, sizeof a.v4);
      break;
    case AF_INET6:
      std::memcpy(&any.storage, &a.v6, sizeof a.v6);
      break;
    case AF_UNIX:
      return {std::string(path), "unix", 0};
    default:
      return {};
  }
  return describe(any);
}

}  // namespace sluice::net::detail
