/* raw_writev: the ceiling for writing small chunks to /dev/null. A plain loop
 * of writev() with 1024 iovecs of 56 bytes each (IOV_MAX on Linux), no
 * stream, no queue, no callback: what is left is the syscall and the kernel's
 * walk over the iovecs. devnull-compare.sh sets sluice-devnull against it.
 *
 *   raw_writev [--duration S] [--path P]
 *
 * Prints one JSON line:
 *   {"name":"raw-writev","cleared":N,"cleared_per_s":X,"peak_rss_bytes":Y}
 * where `cleared` counts 56-byte chunks the kernel accepted.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

enum { chunk_size = 56, chunks_per_call = 1024 };

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void usage(const char* argv0, FILE* out) {
  fprintf(out, "usage: %s [--duration S] [--path P]\n"
               "  writev()s 1024 x 56-byte iovecs to P (default /dev/null) for S seconds (default 3)\n",
          argv0);
}

int main(int argc, char** argv) {
  double duration = 3.0;
  const char* path = "/dev/null";
  for (int i = 1; i < argc; ++i) {
    if (strcmp(argv[i], "--duration") == 0 && i + 1 < argc) {
      char* end;
      duration = strtod(argv[++i], &end);
      if (*end != '\0' || !(duration > 0)) {
        fprintf(stderr, "%s: --duration wants a positive number of seconds, got '%s'\n", argv[0], argv[i]);
        return 2;
      }
    } else if (strcmp(argv[i], "--path") == 0 && i + 1 < argc) {
      path = argv[++i];
    } else if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
      usage(argv[0], stdout);
      return 0;
    } else {
      usage(argv[0], stderr);
      return 2;
    }
  }

  int fd = open(path, O_WRONLY | O_CLOEXEC);
  if (fd < 0) {
    fprintf(stderr, "%s: open %s: %s\n", argv[0], path, strerror(errno));
    return 1;
  }

  /* The chunks lie side by side, as in a stream's arena, but each is its own
   * iovec, as if every write() had handed over its own buffer. */
  static char buf[chunk_size * chunks_per_call];
  static struct iovec iov[chunks_per_call];
  for (int i = 0; i < chunks_per_call; ++i) {
    memset(buf + i * chunk_size, 'a', chunk_size - 1);
    buf[i * chunk_size + chunk_size - 1] = '\n';
    iov[i].iov_base = buf + i * chunk_size;
    iov[i].iov_len = chunk_size;
  }

  unsigned long long bytes = 0;
  const double start = now_s();
  const double stop = start + duration;
  double t = start;
  while (t < stop) {
    ssize_t n = writev(fd, iov, chunks_per_call);
    if (n < 0) {
      if (errno == EINTR) continue;
      fprintf(stderr, "%s: writev %s: %s\n", argv[0], path, strerror(errno));
      return 1;
    }
    /* /dev/null takes everything; a short write to a real file only means
     * fewer chunks are counted, the next call starts over. */
    bytes += (unsigned long long)n;
    t = now_s();
  }
  const double elapsed = t - start;
  close(fd);

  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  const unsigned long long cleared = bytes / chunk_size;
  printf("{\"name\":\"raw-writev\",\"cleared\":%llu,\"cleared_per_s\":%.0f,\"peak_rss_bytes\":%llu}\n", cleared,
         (double)cleared / elapsed, (unsigned long long)ru.ru_maxrss * 1024ULL);
  return 0;
}
