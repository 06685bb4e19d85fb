// pipeline_bench FILE [N]: copies FILE into /dev/null through
// pipeline(file readable, N pass_throughs, /dev/null writable), the way
// perf/pipeline.js does it with Node's stream.pipeline; prints the bytes
// copied. perf/pipeline-compare.sh times the two side by side.
#include <fcntl.h>

#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "sluice/sluice.h"

int main(int argc, char** argv) {
  if (argc < 2 || argc > 3) {
    std::fprintf(stderr, "usage: pipeline_bench FILE [N]\n");
    return 2;
  }
  const int n = argc == 3 ? std::atoi(argv[2]) : 1;
  std::error_code ec;
  auto in = sluice::make_file_readable(argv[1], ec);
  if (!in) {
    std::fprintf(stderr, "pipeline_bench: %s: %s\n", argv[1], ec.message().c_str());
    return 1;
  }
  const int null_fd = ::open("/dev/null", O_WRONLY | O_CLOEXEC);
  auto out = sluice::make_fd_writable(null_fd, true);
  std::vector<std::unique_ptr<sluice::pass_through>> stages;
  std::vector<sluice::stream_ref> streams{*in};
  for (int i = 0; i < n; ++i) {
    stages.push_back(std::make_unique<sluice::pass_through>());
    streams.emplace_back(*stages.back());
  }
  streams.emplace_back(*out);
  std::size_t bytes = 0;
  if (!stages.empty())
    stages.back()->on(sluice::event::data, [&](std::string_view c) { bytes += c.size(); });
  std::error_code result;
  sluice::pipeline(streams, [&](std::error_code e) { result = e; });
  sluice::loop::current().run();
  if (result) {
    std::fprintf(stderr, "pipeline_bench: %s\n", result.message().c_str());
    return 1;
  }
  std::printf("%zu\n", bytes);
  return 0;
}
