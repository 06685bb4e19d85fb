// pipe_fds: a pipe for a test, closed at the end of its scope.
#pragma once

#include <fcntl.h>
#include <unistd.h>

#include <doctest/doctest.h>

namespace sluice::test {

struct pipe_fds {
  int r = -1, w = -1;
  pipe_fds() {
    int fds[2];
    REQUIRE(::pipe2(fds, O_CLOEXEC) == 0);
    r = fds[0];
    w = fds[1];
  }
  pipe_fds(const pipe_fds&) = delete;
  pipe_fds& operator=(const pipe_fds&) = delete;
  ~pipe_fds() {
    close_r();
    close_w();
  }
  void close_r() {
    if (r >= 0) ::close(r);
    r = -1;
  }
  void close_w() {
    if (w >= 0) ::close(w);
    w = -1;
  }
};

}  // namespace sluice::test
