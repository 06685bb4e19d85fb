// log_bench: a logger's workload — N formatted log lines into a file — through
// sluice and the usual C++ ways of doing it, side by side in one run.
//
// Every line looks like
//
//   2026-11-30T00:00:00.123456Z INFO request id=12345 path=/api/v1/items status=200 took_us=345
//
// with the time, id, path, status and duration varying per line (make_line),
// so formatting is real work. Each variant runs in a process of its own (this
// program again, with --child NAME), so its peak RSS is its own; the rounds
// interleave the variants and each keeps its best time, because the machines
// are shared and noisy. Every file is checked byte for byte against the
// expected lines (so all variants wrote the same lines), then deleted. Node
// (log_bench.js) runs as one more child when --node-script is given;
// perf/log-compare.sh passes it.
//
// The parts: lines.h (the workload), variants.* (the ways of writing it),
// child.* (a variant in a child process), verify.* (the file check),
// table.* (the table and the goals), support.* (small helpers), and this
// file (options and rounds).
//
//   log_bench [--lines N] [--reps R] [--dir D] [--only a,b] [--node P] [--node-script F] [--strict]
//
// Time runs from the first line to the moment the data is in the kernel and
// the file is closed (no fsync); setup (opening, making threads) is not
// timed. For the two asynchronous variants the producer's own time (until
// its last log call returns) gets a row of its own.

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cinttypes>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <fmt/core.h>

#include "child.h"
#include "support.h"
#include "table.h"
#include "variants.h"
#include "verify.h"

using namespace log_bench;

namespace {

constexpr const char* usage_text = R"(usage: log_bench [OPTION]...
Writes N log lines into a file through sluice and its peers, each variant in
a child process of its own, and prints one table with ratios and goals.

  --lines N         lines per variant (default 5000000)
  --reps R          rounds over all variants; each keeps its best time
                    (default 3; SLUICE_BENCH_QUICK=1 or --quick: 200000 lines, 1 round)
  --dir D           make the temporary directory inside D (default $TMPDIR or /tmp)
  --only A,B        run only these variants (names as in the table's first column)
  --node P          the node binary (default: node on PATH)
  --node-script F   log_bench.js; without it Node is skipped
  --strict          exit 1 when a goal is missed
  --list            print the variants' names
  --verify PATH     check PATH against the expected --lines lines, and exit
  --child NAME --file PATH   (internal) run one variant in this process; for
                    valgrind/perf: log_bench --child sluice-print --lines 200000 --file /tmp/x.log
)";

}  // namespace

int main(int argc, char** argv) {
  std::uint64_t lines = 5'000'000;
  int reps = 3;
  bool quick = false, strict = false, lines_given = false, reps_given = false;
  std::string dir_parent, only, node = "node", node_script, child, child_file, verify_file;
  if (const char* q = std::getenv("SLUICE_BENCH_QUICK"); q && *q && std::strcmp(q, "0") != 0) quick = true;
  if (const char* t = std::getenv("TMPDIR"); t && *t) dir_parent = t;
  if (const char* nb = std::getenv("NODE"); nb && *nb) node = nb;
  for (int i = 1; i < argc; ++i) {
    const std::string_view a = argv[i];
    auto value = [&]() -> const char* {
      if (i + 1 >= argc) die(fmt::format("{} needs a value", a));
      return argv[++i];
    };
    if (a == "--lines") {
      char* end = nullptr;
      const char* v = value();
      lines = std::strtoull(v, &end, 10);
      if (*end != '\0' || lines == 0 || v[0] == '-') die(fmt::format("--lines wants a positive count, got '{}'", v));
      lines_given = true;
    } else if (a == "--reps") {
      reps = std::atoi(value());
      if (reps < 1) die("--reps wants at least 1");
      reps_given = true;
    } else if (a == "--quick") {
      quick = true;
    } else if (a == "--dir") {
      dir_parent = value();
    } else if (a == "--only") {
      only = value();
    } else if (a == "--node") {
      node = value();
    } else if (a == "--node-script") {
      node_script = value();
    } else if (a == "--strict") {
      strict = true;
    } else if (a == "--child") {
      child = value();
    } else if (a == "--file") {
      child_file = value();
    } else if (a == "--verify") {
      verify_file = value();
    } else if (a == "--list") {
      for (const auto& v : variants()) std::printf("%s\n", v.name);
      return 0;
    } else if (a == "--help" || a == "-h") {
      std::fputs(usage_text, stdout);
      return 0;
    } else {
      die(fmt::format("unknown argument '{}' (try --help)", a));
    }
  }
  if (quick) {
    if (!lines_given) lines = 200'000;
    if (!reps_given) reps = 1;
  }
  if (!verify_file.empty()) {
    const std::string problem = verify(verify_file.c_str(), lines, expected_size(lines));
    std::printf("%s: %s\n", verify_file.c_str(), problem.empty() ? "as expected" : problem.c_str());
    return problem.empty() ? 0 : 1;
  }
  if (!child.empty()) {
    if (child_file.empty() && child != "ref-format-only") die("--child needs --file");
    return child_main(child, child_file.c_str(), lines);
  }

  // Which variants.
  std::vector<const variant*> chosen;
  for (const auto& v : variants()) {
    if (!only.empty()) {
      const std::string list = "," + only + ",";
      if (list.find(std::string(",") + v.name + ",") == std::string::npos) continue;
    }
    chosen.push_back(&v);
  }
  if (chosen.empty()) die("--only selected no variant (try --list)");

  bool node_ok = false;
  for (const auto* v : chosen) {
    if (v->k != kind::node) continue;
    if (node_script.empty()) {
      std::fprintf(stderr, "log_bench: no --node-script given: skipping Node (perf/log-compare.sh passes it)\n");
    } else {
      const spawned probe = spawn_capture({node, "--version"}, true);
      if (!probe.ok)
        std::fprintf(stderr, "log_bench: node not found as '%s' (set NODE or --node): skipping Node\n", node.c_str());
      else
        node_ok = true;
    }
  }

  char self[4096];
  const ssize_t self_len = ::readlink("/proc/self/exe", self, sizeof self - 1);
  if (self_len <= 0) die("cannot read /proc/self/exe");
  self[self_len] = '\0';

  if (dir_parent.empty()) dir_parent = "/tmp";
  std::string dir = dir_parent + "/log_bench.XXXXXX";
  if (!::mkdtemp(dir.data())) die(fmt::format("cannot make a directory in {}: {}", dir_parent, std::strerror(errno)));

  const std::uint64_t want_bytes = expected_size(lines);
  std::fprintf(stderr, "log_bench: %" PRIu64 " lines, %" PRIu64 " bytes per variant, in %s (%s), %d round(s)\n", lines,
               want_bytes, dir.c_str(), fs_type(dir).c_str(), reps);

  std::vector<stats> st(chosen.size());
  bool failed = false;
  for (int r = 0; r < reps; ++r) {
    for (std::size_t k = 0; k < chosen.size(); ++k) {
      const variant& v = *chosen[k];
      if (v.k == kind::node && !node_ok) continue;
      const std::string file = dir + "/" + v.name + ".log";
      ::unlink(file.c_str());
      std::fprintf(stderr, "log_bench: round %d/%d: %s\n", r + 1, reps, v.name);
      spawned s;
      if (v.k == kind::node)
        s = spawn_capture({node, node_script, "--lines", std::to_string(lines), "--file", file}, true);
      else
        s = spawn_capture({self, "--child", v.name, "--lines", std::to_string(lines), "--file", file}, false,
                          v.child_env);
      const auto m = s.ok ? parse_result(s.out) : std::nullopt;
      if (!m) {
        std::fprintf(stderr, "log_bench: %s failed%s\n", v.name, s.ok ? " (no result line)" : "");
        failed = true;
        ::unlink(file.c_str());
        continue;
      }
      if (v.k != kind::reference_no_file) {
        const std::string problem = verify(file.c_str(), lines, want_bytes);
        if (!problem.empty()) {
          std::fprintf(stderr, "log_bench: %s wrote a wrong file: %s\n", v.name, problem.c_str());
          failed = true;
        }
      }
      ::unlink(file.c_str());
      auto& x = st[k];
      ++x.runs;
      x.best_total = std::min(x.best_total, m->total_s);
      x.best_producer = std::min(x.best_producer, m->producer_s);
      x.best_cpu = std::min(x.best_cpu, m->cpu_s);
      x.best_thread_cpu = std::min(x.best_thread_cpu, m->thread_cpu_s);
      x.peak_rss = std::max(x.peak_rss, m->peak_rss);
      x.growth = std::max(x.growth, m->peak_rss > m->rss_before ? m->peak_rss - m->rss_before : 0);
      x.syscw = m->syscw;
      x.wchar = m->wchar;
    }
  }
  ::rmdir(dir.c_str());

  const int missed = print_table(chosen, st, lines, want_bytes, dir_parent, reps);
  std::fflush(stdout);

  if (failed) return 1;
  if (strict && missed > 0) return 1;
  return 0;
}
