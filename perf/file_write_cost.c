// file_write_cost: what one write(2) into a file costs the kernel, by size.
// Appends TOTAL bytes to a new file (O_APPEND, as log_bench's files) in
// writes of 4 KiB to 1 MiB from one buffer the program has just touched (a
// producer's line buffer), and prints the system time a call and a KiB,
// rounds interleaved, each size's best round. The log file's write size
// (the high-water mark a producer waits at: see file_high_water_mark) is
// decided by these figures.
//
//   build/perf/file_write_cost [TOTAL_MB [ROUNDS [DIR]]]   (200, 3, /tmp)
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

static double seconds(struct timeval t) { return (double)t.tv_sec + (double)t.tv_usec * 1e-6; }

static double sys_seconds(void) {
  struct rusage r;
  getrusage(RUSAGE_SELF, &r);
  return seconds(r.ru_stime);
}

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

int main(int argc, char** argv) {
  const size_t total = (size_t)(argc > 1 ? atol(argv[1]) : 200) * 1000 * 1000;
  const int rounds = argc > 2 ? atoi(argv[2]) : 3;
  const char* dir = argc > 3 ? argv[3] : "/tmp";
  static const size_t sizes[] = {4096, 16384, 32768, 65536, 262144, 1048576};
  enum { n_sizes = sizeof sizes / sizeof sizes[0] };
  double best_sys[n_sizes], best_wall[n_sizes];
  char path[4096];
  snprintf(path, sizeof path, "%s/file_write_cost.%d", dir, (int)getpid());
  char* buf = aligned_alloc(4096, sizes[n_sizes - 1]);
  if (!buf) return 1;
  memset(buf, 'x', sizes[n_sizes - 1]);
  for (int s = 0; s < n_sizes; ++s) best_sys[s] = best_wall[s] = 1e9;
  for (int r = 0; r < rounds; ++r) {
    for (int s = 0; s < n_sizes; ++s) {
      const size_t chunk = sizes[s];
      unlink(path);
      const int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_APPEND | O_CLOEXEC, 0644);
      if (fd < 0) {
        perror(path);
        return 1;
      }
      const double s0 = sys_seconds(), t0 = now();
      for (size_t done = 0; done < total; done += chunk) {
        for (size_t i = 0; i < chunk; i += 64) buf[i] = (char)('a' + (done & 15));  // the producer wrote it
        const struct iovec v = {buf, chunk};
        if (writev(fd, &v, 1) != (ssize_t)chunk) {
          perror("writev");
          return 1;
        }
      }
      close(fd);
      const double sys = sys_seconds() - s0, wall = now() - t0;
      unlink(path);
      if (sys < best_sys[s]) best_sys[s] = sys;
      if (wall < best_wall[s]) best_wall[s] = wall;
    }
  }
  printf("%9s %8s %9s %9s %13s %11s\n", "write", "calls", "sys s", "wall s", "sys us/call", "sys ns/KiB");
  for (int s = 0; s < n_sizes; ++s) {
    const double calls = (double)((total + sizes[s] - 1) / sizes[s]);
    printf("%8zuK %8.0f %9.3f %9.3f %13.2f %11.0f\n", sizes[s] / 1024, calls, best_sys[s], best_wall[s],
           best_sys[s] / calls * 1e6, best_sys[s] / ((double)total / 1024) * 1e9);
  }
  free(buf);
  return 0;
}
