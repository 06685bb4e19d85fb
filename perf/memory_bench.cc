// memory_bench: what an idle stream costs, for servers that hold many. For
// each kind of stream: its sizeof, the heap bytes and allocations one
// freshly made stream holds (counted by this program's operator new), the
// heap bytes per stream of 100k idle ones (glibc's mallinfo2, so malloc's
// own overhead is in), and what the first write or read allocates (counted
// by operator new, and in all of malloc's heap, which also sees the
// byte_arena's blocks only as the pages they touch: they come from the arena
// pool's own mappings).
//
//   memory_bench [--count N]
#include <fcntl.h>
#include <malloc.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <new>
#include <string>
#include <vector>

#include "sluice/factories.h"
#include "sluice/loop/loop.h"
#include "sluice/net/socket.h"
#include "sluice/sinks/fd_sink.h"
#include "sluice/sinks/null_sink.h"
#include "sluice/sources/fd_source.h"
#include "sluice/stream/duplex.h"
#include "sluice/stream/readable.h"
#include "sluice/stream/writable.h"

namespace {
std::atomic<std::size_t> news{0};
std::atomic<std::size_t> new_bytes{0};
}  // namespace

void* operator new(std::size_t n) {
  news.fetch_add(1, std::memory_order_relaxed);
  new_bytes.fetch_add(n, std::memory_order_relaxed);
  if (void* p = std::malloc(n ? n : 1)) return p;
  throw std::bad_alloc();
}
void operator delete(void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }
// Over-aligned types (write_req is one cache line) come here.
void* operator new(std::size_t n, std::align_val_t al) {
  news.fetch_add(1, std::memory_order_relaxed);
  new_bytes.fetch_add(n, std::memory_order_relaxed);
  const std::size_t a = static_cast<std::size_t>(al);
  if (void* p = std::aligned_alloc(a, (n + a - 1) / a * a)) return p;
  throw std::bad_alloc();
}
void* operator new[](std::size_t n, std::align_val_t al) { return operator new(n, al); }
void operator delete(void* p, std::align_val_t) noexcept { std::free(p); }
void operator delete(void* p, std::size_t, std::align_val_t) noexcept { std::free(p); }
void operator delete[](void* p, std::align_val_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t, std::align_val_t) noexcept { std::free(p); }

namespace {

struct counts {
  std::size_t allocations;
  std::size_t bytes;
};
counts now() { return {news.load(), new_bytes.load()}; }

// Mapped chunks too: a 64 KiB arena block may come from mmap.
std::size_t heap_in_use() {
  const struct mallinfo2 m = mallinfo2();
  return m.uordblks + m.hblkhd;
}

template <class Make, class Touch>
void measure(const char* name, std::size_t size_of, std::size_t n, Make make, Touch touch) {
  using ptr = decltype(make());
  // One stream: what it allocates when made, and at its first use.
  const counts c0 = now();
  ptr one = make();
  const counts c1 = now();
  const std::size_t t0 = heap_in_use();
  touch(*one);
  const std::size_t t1 = heap_in_use();
  const counts c2 = now();
  one.reset();
  // Many idle streams: the heap per stream, malloc's overhead included.
  std::vector<ptr> many;
  many.reserve(n);
  const std::size_t h0 = heap_in_use();
  for (std::size_t i = 0; i < n; ++i) many.push_back(make());
  const std::size_t h1 = heap_in_use();
  std::printf("%-26s %7zu %9zu B / %2zu allocs %13.0f B %14zu B / %zu allocs %10zu B\n", name, size_of,
              c1.bytes - c0.bytes, c1.allocations - c0.allocations,
              static_cast<double>(h1 - h0) / static_cast<double>(n), c2.bytes - c1.bytes,
              c2.allocations - c1.allocations, t1 - t0);
}

}  // namespace

int main(int argc, char** argv) {
  std::size_t n = 100000;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--count") == 0 && i + 1 < argc) {
      n = std::strtoull(argv[++i], nullptr, 10);
    } else if (std::strcmp(argv[i], "--quick") == 0) {
      n = 10000;
    } else {
      std::fprintf(stderr, "usage: memory_bench [--count N] [--quick]\n");
      return 2;
    }
  }
  if (std::getenv("SLUICE_BENCH_QUICK")) n = 10000;
  sluice::loop& l = sluice::loop::current();
  const int devnull = ::open("/dev/null", O_RDWR | O_CLOEXEC);
  std::printf("idle streams, %zu of each (goal: <= 1 KiB per idle writable, nothing allocated until used)\n", n);
  std::printf("%-26s %7s %24s %15s %24s %12s\n", "stream", "sizeof", "made: heap / allocs", "heap each", "first use: heap / allocs",
              "(all malloc)");
  measure(
      "writable over null_sink", sizeof(sluice::writable), n,
      [&] { return std::make_unique<sluice::writable>(std::make_unique<sluice::null_sink>(), sluice::writable_options{.event_loop = &l}); },
      [&](sluice::writable& w) { w.write("first write\n"); });
  measure(
      "fd writable (/dev/null)", sizeof(sluice::writable), n,
      [&] { return sluice::make_fd_writable(devnull, false, {.event_loop = &l}); },
      [&](sluice::writable& w) { w.write("first write\n"); });
  measure(
      "fd readable (/dev/null)", sizeof(sluice::readable), n,
      [&] { return sluice::make_fd_readable(devnull, false, {.event_loop = &l}); },
      [&](sluice::readable& r) { r.read(); });
  measure(
      "duplex over one fd", sizeof(sluice::duplex), n,
      [&] {
        return std::make_unique<sluice::duplex>(std::make_unique<sluice::fd_source>(devnull),
                                                std::make_unique<sluice::fd_sink>(devnull, false),
                                                sluice::duplex_options{});
      },
      [&](sluice::duplex& d) { d.write("first write\n"); });
  // A connected socket, as a server holds one per client: the fd is one end
  // of a socketpair, shared by all (the socket is destroyed without closing
  // it here: each adopts a dup).
  int pair[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pair) != 0) return 1;
  measure(
      "net::socket (connected)", sizeof(sluice::net::socket), n,
      [&] { return std::make_unique<sluice::net::socket>(::dup(pair[0]), sluice::net::socket_options{.event_loop = &l}); },
      [&](sluice::net::socket& s) { s.write("first write\n"); });
  l.run_until_idle();
  return 0;
}
