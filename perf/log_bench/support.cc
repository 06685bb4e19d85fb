#include "support.h"

#include <fcntl.h>
#include <sys/statfs.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include <fmt/format.h>

namespace log_bench {

double seconds_between(clock_type::time_point a, clock_type::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

[[noreturn]] void die(const std::string& msg) {
  std::fprintf(stderr, "log_bench: %s\n", msg.c_str());
  std::exit(1);
}

std::size_t current_rss_bytes() {
  long total = 0, resident = 0;
  if (FILE* f = std::fopen("/proc/self/statm", "r")) {
    if (std::fscanf(f, "%ld %ld", &total, &resident) != 2) resident = 0;
    std::fclose(f);
  }
  return static_cast<std::size_t>(resident) * static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
}

// VmHWM, not getrusage's ru_maxrss: posix_spawn starts the child on the
// parent's memory (vfork), and exec folds that peak into ru_maxrss; VmHWM
// belongs to the program's own address space.
std::size_t peak_rss_bytes() {
  std::size_t kib = 0;
  if (FILE* f = std::fopen("/proc/self/status", "r")) {
    char buf[256];
    while (std::fgets(buf, sizeof buf, f))
      if (std::sscanf(buf, "VmHWM: %zu kB", &kib) == 1) break;
    std::fclose(f);
  }
  return kib * 1024;
}

double cpu_seconds(int who) {
  rusage ru{};
  getrusage(who, &ru);
  return static_cast<double>(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
         static_cast<double>(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}

io_counts read_io() {
  io_counts c;
  if (FILE* f = std::fopen("/proc/self/io", "r")) {
    char key[64];
    unsigned long long v;
    while (std::fscanf(f, "%63[^:]: %llu\n", key, &v) == 2) {
      if (std::strcmp(key, "syscw") == 0) c.syscw = v;
      if (std::strcmp(key, "wchar") == 0) c.wchar = v;
    }
    std::fclose(f);
  }
  return c;
}

int open_log(const char* path) {
  const int fd = ::open(path, O_WRONLY | O_CREAT | O_TRUNC | O_APPEND | O_CLOEXEC, 0644);
  if (fd < 0) die(fmt::format("cannot open {}: {}", path, std::strerror(errno)));
  return fd;
}

void write_all(int fd, const char* p, std::size_t n) {
  while (n > 0) {
    const ssize_t w = ::write(fd, p, n);
    if (w < 0) {
      if (errno == EINTR) continue;
      die(fmt::format("write: {}", std::strerror(errno)));
    }
    p += w;
    n -= static_cast<std::size_t>(w);
  }
}

std::string fs_type(const std::string& dir) {
  struct statfs s{};
  if (::statfs(dir.c_str(), &s) != 0) return "?";
  switch (static_cast<unsigned long>(s.f_type)) {
    case 0xEF53: return "ext2/3/4";
    case 0x01021994: return "tmpfs";
    case 0x58465342: return "xfs";
    case 0x9123683E: return "btrfs";
    case 0x794c7630: return "overlayfs";
    default: return fmt::format("f_type {:#x}", static_cast<unsigned long>(s.f_type));
  }
}

}  // namespace log_bench
