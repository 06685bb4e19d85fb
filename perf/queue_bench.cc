// queue_bench: the cost of one push + one pop on a queue that already holds
// N pending writes, for sluice's write queue and the standard containers.
//
// Each operation enqueues a 56-byte chunk's request at the back and retires
// the one at the front, as a stream does when the sink completes a write while
// the application keeps writing. sluice's queue is an intrusive list over
// pooled requests, so it must cost the same at every N; std::vector's
// erase-front moves all N elements and is measured with fewer operations.
//
// Output: one line per implementation, ns per push+pop for each N, then the
// ratio of sluice's cost at the largest N to its cost at the smallest.
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <deque>
#include <list>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "bench.h"
#include "sluice/queue/write_queue.h"

namespace {

using sluice::detail::req_pool;
using sluice::detail::write_queue;
using sluice::detail::write_req;

constexpr std::string_view chunk = "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\n";
static_assert(chunk.size() == 56);

// What a standard container would hold for one pending write: the bytes and
// the callback, like write_req without the hook.
struct pending {
  std::string_view data;
  sluice::write_cb cb;
};

std::uint64_t checksum = 0;  // popped bytes, printed so no pop can be elided

// The write queue as writable uses it: requests from a req_pool, queued by
// push_back, retired by pop_front and given back to the pool.
struct sluice_queue {
  req_pool pool;
  write_queue q;
  bool arena;  // copy the chunk into the pool's arena, as writable::write does

  sluice_queue(std::size_t n, bool use_arena) : arena(use_arena) {
    for (std::size_t i = 0; i < n; ++i) push();
  }
  ~sluice_queue() {
    while (!q.empty()) retire(q.pop_front());
  }
  void push() {
    write_req& r = pool.acquire();
    if (arena) {
      std::byte* p = pool.arena.allocate(chunk.size());
      std::memcpy(p, chunk.data(), chunk.size());
      r.set({reinterpret_cast<const char*>(p), chunk.size()});
    } else {
      r.set(chunk);
    }
    q.push_back(r);
  }
  // The pool gives arena bytes back by the address of r.first: bytes that are
  // not in the arena must be forgotten first.
  void retire(write_req& r) {
    if (!arena) r.set({});
    pool.release(r);
  }
  void run(std::uint64_t ops) {
    std::uint64_t sum = 0;
    for (std::uint64_t i = 0; i < ops; ++i) {
      push();
      write_req& r = q.pop_front();
      sum += r.bytes();
      retire(r);
    }
    checksum += sum;
  }
};

struct vector_queue {
  std::vector<pending> v;
  explicit vector_queue(std::size_t n) {
    v.reserve(n + 1);
    for (std::size_t i = 0; i < n; ++i) v.push_back({chunk, {}});
  }
  void run(std::uint64_t ops) {
    std::uint64_t sum = 0;
    for (std::uint64_t i = 0; i < ops; ++i) {
      v.push_back({chunk, {}});
      sum += v.front().data.size();
      v.erase(v.begin());
    }
    checksum += sum;
  }
};

template <class Container>
struct std_queue {
  Container c;
  explicit std_queue(std::size_t n) {
    for (std::size_t i = 0; i < n; ++i) c.push_back({chunk, {}});
  }
  void run(std::uint64_t ops) {
    std::uint64_t sum = 0;
    for (std::uint64_t i = 0; i < ops; ++i) {
      c.push_back({chunk, {}});
      sum += c.front().data.size();
      c.pop_front();
    }
    checksum += sum;
  }
};

struct impl_row {
  const char* name;
  std::vector<double> ns;  // per N
};

}  // namespace

int main(int argc, char** argv) {
  const auto opt = bench::options::parse(argc, argv);
  const std::vector<std::size_t> sizes = {1000, 10000, 100000, 1000000};

  std::vector<impl_row> rows = {
      {"sluice write_queue", {}}, {"sluice +arena copy", {}}, {"std::vector erase", {}},
      {"std::deque", {}},         {"std::list", {}},
  };

  // One N at a time, all implementations side by side, then freed: the
  // largest N holds a few hundred MB at once otherwise.
  for (std::size_t n : sizes) {
    auto sq = std::make_shared<sluice_queue>(n, false);
    auto sa = std::make_shared<sluice_queue>(n, true);
    auto vq = std::make_shared<vector_queue>(n);
    auto dq = std::make_shared<std_queue<std::deque<pending>>>(n);
    auto lq = std::make_shared<std_queue<std::list<pending>>>(n);

    std::vector<bench::timed_case> cases;
    cases.push_back({"sluice", [sq](std::uint64_t k) { sq->run(k); }});
    cases.push_back({"sluice+arena", [sa](std::uint64_t k) { sa->run(k); }});
    cases.push_back({"vector", [vq](std::uint64_t k) { vq->run(k); }});
    cases.back().start_iters = 1;  // O(N) per op: let calibration cap the op count
    cases.push_back({"deque", [dq](std::uint64_t k) { dq->run(k); }});
    cases.push_back({"list", [lq](std::uint64_t k) { lq->run(k); }});
    bench::run_interleaved(cases, opt);

    for (std::size_t i = 0; i < cases.size(); ++i) rows[i].ns.push_back(cases[i].best_ns);
    if (sq->q.size() != n || sa->q.size() != n || vq->v.size() != n || dq->c.size() != n ||
        lq->c.size() != n) {
      std::fprintf(stderr, "queue_bench: a queue lost its steady state at N=%zu\n", n);
      return 1;
    }
  }

  std::printf("# queue_bench: ns per push+pop with N pending, best of %d%s; sizeof(write_req)=%zu, sizeof(pending)=%zu\n",
              opt.reps, opt.quick ? " (quick)" : "", sizeof(write_req), sizeof(pending));
  std::printf("%-20s", "queue  impl \\ N");
  for (std::size_t n : sizes) std::printf(" %12zu", n);
  std::printf("\n");
  for (const auto& r : rows) {
    std::printf("%-20s", r.name);
    for (double ns : r.ns) std::printf(" %12.2f", ns);
    std::printf("\n");
  }
  const auto& s = rows[0].ns;
  const double flat = s.back() / s.front();
  std::printf("flat: sluice write_queue at N=%zu costs %.2fx its cost at N=%zu  %s (goal <= 2.00x)\n",
              sizes.back(), flat, sizes.front(), flat <= 2.0 ? "PASS" : "MISS");
  std::printf("# checksum %llu\n", static_cast<unsigned long long>(checksum));
  return 0;
}
