#include "child.h"

#include <fcntl.h>
#include <spawn.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstring>

#include "support.h"
#include "variants.h"

extern char** environ;

namespace log_bench {

std::optional<measurement> parse_result(const std::string& out) {
  const auto pos = out.rfind("result ");
  if (pos == std::string::npos) return std::nullopt;
  measurement m;
  unsigned long long rb, pr, sc, wc;
  if (std::sscanf(out.c_str() + pos,
                  "result total_s=%lf producer_s=%lf rss_before=%llu peak_rss=%llu syscw=%llu wchar=%llu cpu_s=%lf "
                  "thread_cpu_s=%lf",
                  &m.total_s, &m.producer_s, &rb, &pr, &sc, &wc, &m.cpu_s, &m.thread_cpu_s) != 8)
    return std::nullopt;
  m.rss_before = rb;
  m.peak_rss = pr;
  m.syscw = sc;
  m.wchar = wc;
  return m;
}

int child_main(std::string_view name, const char* path, std::uint64_t n) {
  const std::size_t rss_before = current_rss_bytes();
  const io_counts io0 = read_io();
  const double cpu0 = cpu_seconds(), thread_cpu0 = cpu_seconds(RUSAGE_THREAD);
  const timing t = run_variant(name, path, n);
  const double cpu1 = cpu_seconds(), thread_cpu1 = cpu_seconds(RUSAGE_THREAD);
  const io_counts io1 = read_io();
  std::printf("result total_s=%.9f producer_s=%.9f rss_before=%zu peak_rss=%zu syscw=%" PRIu64 " wchar=%" PRIu64
              " cpu_s=%.6f thread_cpu_s=%.6f\n",
              t.total_s, t.producer_s, rss_before, peak_rss_bytes(), io1.syscw - io0.syscw, io1.wchar - io0.wchar,
              cpu1 - cpu0, thread_cpu1 - thread_cpu0);
  return 0;
}

spawned spawn_capture(const std::vector<std::string>& argv, bool search_path, const char* extra_env) {
  int p[2];
  if (::pipe2(p, O_CLOEXEC) != 0) die("pipe2 failed");
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, p[1], STDOUT_FILENO);
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  std::vector<char*> env;
  for (char** e = environ; *e; ++e) env.push_back(*e);
  if (extra_env) env.push_back(const_cast<char*>(extra_env));
  env.push_back(nullptr);
  pid_t pid;
  const int rc = search_path ? posix_spawnp(&pid, args[0], &fa, nullptr, args.data(), env.data())
                             : posix_spawn(&pid, args[0], &fa, nullptr, args.data(), env.data());
  posix_spawn_file_actions_destroy(&fa);
  ::close(p[1]);
  spawned r;
  if (rc != 0) {
    ::close(p[0]);
    std::fprintf(stderr, "log_bench: cannot run %s: %s\n", args[0], std::strerror(rc));
    return r;
  }
  char buf[4096];
  for (;;) {
    const ssize_t got = ::read(p[0], buf, sizeof buf);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) break;
    r.out.append(buf, static_cast<std::size_t>(got));
  }
  ::close(p[0]);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  r.ok = WIFEXITED(status) && WEXITSTATUS(status) == 0;
  if (!r.ok) std::fprintf(stderr, "log_bench: %s exited with status %d\n", argv[0].c_str(), status);
  return r;
}

}  // namespace log_bench
