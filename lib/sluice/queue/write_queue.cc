// req_pool's slab_pool: the first slabs of quiet streams, per thread, chained
// through their first request's next_free, as byte_arena.cc keeps blocks; a
// guard frees them when the thread ends, after which a slab given back is
// freed at once.
#include "sluice/queue/write_queue.h"

#include <utility>

namespace sluice::detail {

namespace {
struct slab_state {
  write_req* head = nullptr;
  std::size_t count = 0;
  bool guarded = false;  // the exit guard is registered
  bool gone = false;     // the thread is ending
};
constinit thread_local slab_state slabs{};

struct exit_guard {
  ~exit_guard() {
    req_pool::slab_pool::trim();
    slabs.gone = true;
  }
};

[[gnu::noinline]] void guard_thread() noexcept {
  static thread_local exit_guard guard;
  (void)guard;
  slabs.guarded = true;
}
}  // namespace

write_req* req_pool::slab_pool::take() noexcept {
  slab_state& s = slabs;
  write_req* slab = s.head;
  if (slab) {
    s.head = slab->next_free;
    --s.count;
  }
  return slab;
}

void req_pool::slab_pool::put(write_req* slab) noexcept {
  slab_state& s = slabs;
  if (s.count >= max_slabs || s.gone) [[unlikely]] {
    delete[] slab;
    return;
  }
  if (!s.guarded) [[unlikely]]
    guard_thread();
  slab->next_free = s.head;
  s.head = slab;
  ++s.count;
}

std::size_t req_pool::slab_pool::size() noexcept { return slabs.count; }

void req_pool::slab_pool::trim() noexcept {
  slab_state& s = slabs;
  while (s.head) delete[] std::exchange(s.head, s.head->next_free);
  s.count = 0;
}

}  // namespace sluice::detail
