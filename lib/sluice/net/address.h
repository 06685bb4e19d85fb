// address: the socket addresses of net::socket and net::server, as Node's
// socket.address(), remoteAddress/remotePort and server.address() give them.
#pragma once

#include <netinet/in.h>
#include <sys/socket.h>

#include <cstdint>
#include <string>
#include <string_view>
#include <system_error>

namespace sluice::net {

/// Node's { address, family, port }. `family` is "IPv4" or "IPv6", as Node
/// spells it; for a Unix socket it is "unix", `address` the path (Node's
/// server.address() returns the bare path string) and `port` 0.
struct address_info {
  std::string address;
  std::string family;
  std::uint16_t port = 0;

  bool operator==(const address_info&) const = default;
};

/// Node: net.isIP(): 4 for an IPv4 address in dotted decimal ("127.0.0.1",
/// no leading zeros), 6 for an IPv6 address (a zone, "fe80::1%eth0", is
/// allowed), 0 for anything else (names included).
int is_ip(std::string_view input) noexcept;
/// Node: net.isIPv4() and net.isIPv6().
inline bool is_ipv4(std::string_view input) noexcept { return is_ip(input) == 4; }
inline bool is_ipv6(std::string_view input) noexcept { return is_ip(input) == 6; }

namespace detail {

/// Any socket address, and its length, as the kernel takes it.
struct sockaddr_any {
  sockaddr_storage storage{};
  socklen_t length = 0;

  const sockaddr* get() const noexcept { return reinterpret_cast<const sockaddr*>(&storage); }
  sockaddr* get() noexcept { return reinterpret_cast<sockaddr*>(&storage); }
  int family() const noexcept { return storage.ss_family; }
};

/// A connected socket's peer in 28 bytes: an IP socket's sockaddr_in or
/// sockaddr_in6 as getpeername() gives it; for a Unix socket, the family
/// alone (its peer's path, when there is one, is kept apart). Family 0:
/// none.
union peer_address {
  sa_family_t family;
  sockaddr_in v4;
  sockaddr_in6 v6;
};

/// A TCP address from an IP literal ("127.0.0.1", "::1") or "localhost"
/// (127.0.0.1). Differs from Node: names are not looked up (a lookup would
/// block the loop); EINVAL for anything else.
std::error_code tcp_address(std::string_view host, std::uint16_t port, sockaddr_any& out) noexcept;
/// A Unix stream socket's address; ENAMETOOLONG past sun_path's size.
std::error_code unix_address(std::string_view path, sockaddr_any& out) noexcept;
/// The address as Node shows it.
address_info describe(const sockaddr_any& a);
/// getsockname() and getpeername(), described; empty on failure.
address_info local_address_of(int fd);
/// getpeername(), kept short: `path` gets a Unix peer's path. Family 0 on
/// failure.
peer_address peer_of(int fd, std::string& path);
/// The peer as Node shows it; `path` is a Unix peer's.
address_info describe(const peer_address& a, std::string_view path);
address_info remote_address_of(int fd);

}  // namespace detail
}  // namespace sluice::net
