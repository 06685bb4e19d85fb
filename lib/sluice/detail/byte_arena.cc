// byte_arena's block_pool: plain thread-local data (a free chain through the
// blocks' headers and a count), so taking and giving a block is a few loads
// and stores; a guard frees the blocks when the thread ends, after which a
// block given back is freed at once (a stream destroyed by a later
// thread_local or static destructor).
#include "sluice/detail/byte_arena.h"

#include <cstdlib>
#include <utility>

namespace sluice::detail {

namespace {
struct pool_state {
  byte_arena::block* head = nullptr;
  std::size_t count = 0;
  bool guarded = false;  // the exit guard is registered
  bool gone = false;     // the thread is ending
};
constinit thread_local pool_state pool{};

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
}  // namespace

byte_arena::block* byte_arena::block_pool::take() noexcept {
  pool_state& s = pool;
  block* b = s.head;
  if (b) {
    s.head = b->next_spare;
    --s.count;
  }
  return b;
}

void byte_arena::block_pool::put(block* b) noexcept {
  pool_state& s = pool;
  if (s.count >= max_blocks || s.gone) [[unlikely]] {
    std::free(b);
    return;
  }
  if (!s.guarded) [[unlikely]]
    guard_thread();
  b->next_spare = s.head;
  s.head = b;
  ++s.count;
}

std::size_t byte_arena::block_pool::size() noexcept { return pool.count; }

void byte_arena::block_pool::trim() noexcept {
  pool_state& s = pool;
  while (s.head) std::free(std::exchange(s.head, s.head->next_spare));
  s.count = 0;
}

}  // namespace sluice::detail
