// Every output file is checked byte for byte against the expected lines.
#pragma once

#include <cstdint>
#include <string>

namespace log_bench {

// The bytes of the first `n` lines.
std::uint64_t expected_size(std::uint64_t n);

// Checks `path` against the expected lines: same bytes, so the same line
// count and size. Returns an empty string when it matches, else what differs.
std::string verify(const char* path, std::uint64_t n, std::uint64_t want_bytes);

}  // namespace log_bench
