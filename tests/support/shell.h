// sh: a shell command's stdout, for tests that check a file with another
// program (python3's json module, gzip).
#pragma once

#include <doctest/doctest.h>

#include <cstdio>
#include <string>

namespace sluice::test {

/// Runs `cmd` with /bin/sh; its stdout, once it exits with 0 (checked).
inline std::string sh(const std::string& cmd) {
  std::FILE* p = ::popen(cmd.c_str(), "r");
  REQUIRE(p);
  std::string out;
  char buf[4096];
  for (std::size_t n; (n = std::fread(buf, 1, sizeof buf, p)) > 0;) out.append(buf, n);
  CHECK(::pclose(p) == 0);
  return out;
}

}  // namespace sluice::test
