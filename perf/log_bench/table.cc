#include "table.h"

#include <cinttypes>
#include <cstdio>
#include <string_view>
#include <utility>

#include <fmt/format.h>

#include "support.h"

namespace log_bench {

namespace {

std::string human_rate(double v) {
  if (v >= 999.5e3) return fmt::format("{:.2f} M", v / 1e6);
  if (v >= 1e3) return fmt::format("{:.1f} k", v / 1e3);
  return fmt::format("{:.0f}", v);
}

}  // namespace

int print_table(const std::vector<const variant*>& chosen, const std::vector<stats>& st, std::uint64_t lines,
                std::uint64_t want_bytes, const std::string& dir_parent, int reps) {
  auto find = [&](std::string_view name) -> const stats* {
    for (std::size_t k = 0; k < chosen.size(); ++k)
      if (chosen[k]->name == name && st[k].runs > 0) return &st[k];
    return nullptr;
  };
  const stats* base = find("sluice-print");
  const double mb = static_cast<double>(want_bytes) / 1e6;
  std::printf("\nlog_bench: %" PRIu64 " lines, %.1f MB per variant, one file per variant in %s (%s), best of %d\n\n",
              lines, mb, dir_parent.c_str(), fs_type(dir_parent).c_str(), reps);
  std::printf("%-34s %9s %7s %7s %7s %9s %8s %8s %8s %8s\n", "variant", "lines/s", "MB/s", "time s", "cpu s",
              "write(2)s", "peak RSS", "RSS grow", "sluice/", "sluice/");
  std::printf("%-34s %9s %7s %7s %7s %9s %8s %8s %8s %8s\n", "", "", "", "", "", "", "MiB", "MiB", "this", "this");
  std::printf("%-34s %9s %7s %7s %7s %9s %8s %8s %8s %8s\n", "", "", "", "", "", "", "", "", "(wall)", "(cpu)");
  auto ratio_s = [](double base_value, double value) {
    return value > 0 ? fmt::format("{:.2f}x", base_value / value) : std::string("-");
  };
  auto row = [&](const char* label, double secs, double cpu, const stats& x, bool producer_row) {
    const double rate = static_cast<double>(lines) / secs;
    const std::string wall_ratio = base ? ratio_s(secs, base->best_total) : "-";
    const std::string cpu_ratio = base ? ratio_s(cpu, base->best_cpu) : "-";
    const std::string sys = producer_row ? "" : fmt::format("{}", x.syscw);
    std::printf("%-34s %9s %7.1f %7.3f %7.3f %9s %8.1f %8.1f %8s %8s\n", label, human_rate(rate).c_str(), mb / secs,
                secs, cpu, sys.c_str(), static_cast<double>(x.peak_rss) / 1048576.0,
                static_cast<double>(x.growth) / 1048576.0, wall_ratio.c_str(), cpu_ratio.c_str());
  };
  for (std::size_t k = 0; k < chosen.size(); ++k) {
    const variant& v = *chosen[k];
    const stats& x = st[k];
    if (x.runs == 0) {
      std::printf("%-34s %9s\n", v.label, "skipped");
      continue;
    }
    if (v.producer_label) row(v.producer_label, x.best_producer, x.best_thread_cpu, x, true);
    row(v.label, x.best_total, x.best_cpu, x, false);
  }
  std::printf("\n(MB = 10^6 bytes. time s: the best wall time of the rounds; cpu s: the best user+sys time,\n"
              " of the whole process on the rows that run to the end, of the producing thread on the\n"
              " producer rows (Node: its whole process). sluice/this: how many times faster sluice print\n"
              " is, by wall time and by CPU time; CPU time moves less when the machine is busy.\n"
              " RSS grow: peak RSS (VmHWM) minus the RSS just before the first line. write(2)s: the\n"
              " process's write syscalls during the variant, all threads (/proc/self/io).)\n");

  // The goals, on wall time (the goals' own measure), then the same ratios
  // on CPU time for comparison.
  int missed = 0, skipped = 0;
  const stats* spd_sync = find("spdlog-sync");
  const stats* fmt_file = find("fmt-output-file");
  const stats* worker = find("sluice-worker");
  const stats* spd_async = find("spdlog-async");
  std::printf("\n%-46s %7s %7s   %-8s %s\n", "goal", "wall", "(cpu)", "want", "result");
  // goal(label, a, b, wall_a, wall_b, cpu_a, cpu_b, at_least, want): the
  // ratio a/b, judged on wall time.
  auto goal = [&](const char* label, const stats* a, const stats* b, auto value, bool at_least, double want) {
    const std::string want_s = fmt::format("{} {}x", at_least ? ">=" : "<=", want);
    if (!a || !b) {
      std::printf("%-46s %7s %7s   %-8s %s\n", label, "n/a", "", want_s.c_str(), "SKIP");
      ++skipped;
      return;
    }
    const auto [wall, cpu] = value(*a, *b);
    const bool ok = at_least ? wall >= want : wall <= want;
    if (!ok) ++missed;
    const std::string cpu_s = cpu > 0 ? fmt::format("({:.2f}x)", cpu) : std::string("");
    std::printf("%-46s %6.2fx %7s   %-8s %s\n", label, wall, cpu_s.c_str(), want_s.c_str(), ok ? "PASS" : "MISS");
  };
  // Speed ratios: the other's time over sluice's.
  auto faster = [](const stats& a, const stats& b) {
    return std::pair{b.best_total / a.best_total, b.best_cpu / a.best_cpu};
  };
  auto faster_producer = [](const stats& a, const stats& b) {
    return std::pair{b.best_producer / a.best_producer, b.best_thread_cpu / a.best_thread_cpu};
  };
  auto rss = [](const stats& a, const stats& b) {
    return std::pair{static_cast<double>(a.peak_rss) / static_cast<double>(b.peak_rss), 0.0};
  };
  goal("sluice print vs spdlog sync (_mt), speed", base, spd_sync, faster, true, 1.5);
  goal("sluice print vs fmt::output_file, speed", base, fmt_file, faster, true, 1.0);
  goal("worker producer vs spdlog async producer", worker, spd_async, faster_producer, true, 4.0);
  goal("sluice print / fmt::output_file, peak RSS", base, fmt_file, rss, false, 2.0);
  goal("print vs fmt::output_file, speed (issue 39)", base, fmt_file, faster, true, 2.0);
  // The same goals with compiled formats on both sides where the peer takes
  // them (spdlog's loggers take runtime formats only).
  const stats* base_c = find("sluice-print-compiled");
  const stats* fmt_file_c = find("fmt-output-file-compiled");
  const stats* worker_c = find("sluice-worker-compiled");
  std::printf("%s\n", "with FMT_COMPILE:");
  goal("print FMT_COMPILE vs spdlog sync (_mt), speed", base_c, spd_sync, faster, true, 1.5);
  goal("print FMT_COMPILE vs output_file FMT_COMPILE", base_c, fmt_file_c, faster, true, 1.0);
  goal("print FMT_COMPILE vs output_file (runtime)", base_c, fmt_file, faster, true, 1.0);
  goal("worker FMT_COMPILE producer vs spdlog async", worker_c, spd_async, faster_producer, true, 4.0);
  goal("print FMT_COMPILE / output_file, peak RSS", base_c, fmt_file, rss, false, 2.0);
  goal("print COMPILE vs spdlog rotating (issue 39)", base_c, find("spdlog-rotating"), faster, true, 2.5);
  if (worker && spd_async)
    std::printf("%-46s %6.2fx %7s   (for reference)\n", "worker until flush_sync vs spdlog async until shut",
                spd_async->best_total / worker->best_total,
                fmt::format("({:.2f}x)", spd_async->best_cpu / worker->best_cpu).c_str());
  std::printf("\ngoals: %d missed, %d skipped\n", missed, skipped);
  return missed;
}

}  // namespace log_bench
