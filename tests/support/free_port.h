// free_port: a loopback TCP port that nothing listens on, for tests that
// need a refused connection or a port to start a receiver on later.
#pragma once

#include <doctest/doctest.h>

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdint>

namespace sluice::test {

/// Bound to port 0 on 127.0.0.1, then closed: the kernel's choice of a free
/// port. Another process may take it before the test uses it, which is rare
/// in the ephemeral range and fails the test rather than hiding anything.
inline std::uint16_t free_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  REQUIRE(fd >= 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof a;
  REQUIRE(::bind(fd, reinterpret_cast<sockaddr*>(&a), len) == 0);
  REQUIRE(::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) == 0);
  ::close(fd);
  return ntohs(a.sin_port);
}

}  // namespace sluice::test
