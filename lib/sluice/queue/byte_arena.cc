// byte_arena's block_pool: plain thread-local data (two free chains through
// the blocks' headers, a count and the bytes they touched), so taking and
// giving a block is a few loads and stores; a guard unmaps the blocks when
// the thread ends, after which a block given back is unmapped at once (a
// stream destroyed by a later thread_local or static destructor).
#include "sluice/queue/byte_arena.h"

#include <sys/mman.h>

#include <algorithm>
#include <cstdint>
#include <utility>

namespace sluice::detail {

namespace {
using block = byte_arena::block;
constexpr std::size_t block_size = byte_arena::block_size;
constexpr std::size_t page = 4096;
// Blocks mapped at once: one mmap (and two trims for the alignment) for 16
// streams' first writes. Untouched, they cost address space only.
constexpr std::size_t slab_blocks = 16;

struct pool_state {
  block* head = nullptr;   // given back: warm, LIFO so the warmest goes first
  block* fresh = nullptr;  // mapped and never used: no resident page yet
  std::size_t count = 0;    // blocks on `head`
  std::size_t touched = 0;  // their touched bytes
  std::size_t maps = 0;
  bool guarded = false;  // the exit guard is registered
  bool gone = false;     // the thread is ending
};
// initial-exec: no __tls_get_addr() call per access. A program links
// libsluice (sluice-log's dlopen()ed modules find it loaded already); one
// that dlopen()s it takes these few bytes from glibc's static TLS surplus.
constinit thread_local pool_state pool [[gnu::tls_model("initial-exec")]]{};

struct exit_guard {
  ~exit_guard() {
    byte_arena::block_pool::trim();
    pool.gone = true;
  }
};

[[gnu::noinline]] void guard_thread() noexcept {
  static thread_local exit_guard guard;
  (void)guard;
  pool.guarded = true;
}

void unmap(block* b) noexcept { ::munmap(b, block_size); }

// n blocks aligned to their size: a mapping one block larger, trimmed.
[[gnu::noinline]] block* map_blocks(std::size_t n) noexcept {
  const std::size_t span = (n + 1) * block_size;
  void* m = ::mmap(nullptr, span, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (m == MAP_FAILED) return nullptr;
  ++pool.maps;
  const auto start = reinterpret_cast<std::uintptr_t>(m);
  const std::uintptr_t aligned = (start + block_size - 1) & ~(block_size - 1);
  if (aligned != start) ::munmap(m, aligned - start);
  const std::uintptr_t end = aligned + n * block_size;
  if (end != start + span) ::munmap(reinterpret_cast<void*>(end), start + span - end);
  return reinterpret_cast<block*>(aligned);
}

[[gnu::noinline]] block* take_fresh() noexcept {
  pool_state& s = pool;
  if (!s.fresh) {
    const std::size_t n = s.gone ? 1 : slab_blocks;
    std::byte* slab = reinterpret_cast<std::byte*>(map_blocks(n));
    if (!slab) return nullptr;
    for (std::size_t i = n; i-- > 1;) {
      block* b = reinterpret_cast<block*>(slab + i * block_size);
      b->next_spare = s.fresh;  // writes one page of each: it is theirs anyway
      s.fresh = b;
    }
    auto* first = reinterpret_cast<block*>(slab);
    first->touched = 0;
    if (!s.guarded && !s.gone) guard_thread();
    return first;
  }
  block* b = s.fresh;
  s.fresh = b->next_spare;
  b->touched = 0;
  return b;
}
}  // namespace

byte_arena::block* byte_arena::block_pool::take() noexcept {
  pool_state& s = pool;
  block* b = s.head;
  if (!b) [[unlikely]]
    return take_fresh();
  s.head = b->next_spare;
  --s.count;
  s.touched -= b->touched;
  return b;
}

void byte_arena::block_pool::put(block* b) noexcept {
  pool_state& s = pool;
  const std::size_t touched = std::max(b->touched, (b->used + page - 1) & ~(page - 1));
  if (s.touched + touched > max_bytes || s.count >= max_blocks || s.gone) [[unlikely]] {
    unmap(b);
    return;
  }
  if (!s.guarded) [[unlikely]]
    guard_thread();
  b->touched = touched;
  b->next_spare = s.head;
  s.head = b;
  ++s.count;
  s.touched += touched;
}

std::size_t byte_arena::block_pool::size() noexcept { return pool.count; }
std::size_t byte_arena::block_pool::touched_bytes() noexcept { return pool.touched; }
std::size_t byte_arena::block_pool::maps() noexcept { return pool.maps; }

void byte_arena::block_pool::trim() noexcept {
  pool_state& s = pool;
  while (s.head) unmap(std::exchange(s.head, s.head->next_spare));
  while (s.fresh) unmap(std::exchange(s.fresh, s.fresh->next_spare));
  s.count = 0;
  s.touched = 0;
}

}  // namespace sluice::detail
