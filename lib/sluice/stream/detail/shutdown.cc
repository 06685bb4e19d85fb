// The registry of streams to write out at exit, and the loops that take in
// the streams of a loop that went; see shutdown.h. A list under one mutex,
// touched only when a stream is built or destroyed, a loop is destroyed, or
// the program exits.
#include "sluice/stream/detail/shutdown.h"

#include <cstdlib>
#include <mutex>
#include <vector>

#include "sluice/loop/loop.h"

namespace sluice::detail {

namespace {

// Constant-initialized and trivially destroyed: usable from atexit handlers
// and static destructors in any order.
constinit std::mutex registry_mutex;
constinit shutdown_link* registry_head = nullptr;
constinit bool handler_installed = false;

thread_local char thread_marker;

}  // namespace

void shutdown_registry::add(shutdown_link& link) noexcept {
  link.thread = &thread_marker;
  std::lock_guard lock(registry_mutex);
  if (!handler_installed) {
    // Registered on the first stream, so that it runs before the static
    // objects built earlier (a file_worker) are destroyed.
    handler_installed = std::atexit(&shutdown_registry::at_exit) == 0;
  }
  link.prev = nullptr;
  link.next = registry_head;
  if (registry_head) registry_head->prev = &link;
  registry_head = &link;
}

void shutdown_registry::remove(shutdown_link& link) noexcept {
  if (!link.thread) return;
  std::lock_guard lock(registry_mutex);
  if (link.prev)
    link.prev->next = link.next;
  else
    registry_head = link.next;
  if (link.next) link.next->prev = link.prev;
  link.prev = link.next = nullptr;
  link.thread = nullptr;
}

// Oldest streams first: the list is newest first, so walk it from the tail.
void shutdown_registry::at_exit() noexcept {
  std::lock_guard lock(registry_mutex);
  shutdown_link* tail = registry_head;
  while (tail && tail->next) tail = tail->next;
  for (shutdown_link* p = tail; p; p = p->prev)
    if (p->thread == &thread_marker) p->at_exit(*p);
}

// Streams whose loop went first move to a loop of their own, which never
// runs and is never freed: their later calls (a write, the destructor's
// cancel()) stay defined, and one thread's orphans share no loop with
// another's. The list keeps them reachable, for leak checkers.
loop* shutdown_registry::orphan_loop() noexcept {
  thread_local loop* home = nullptr;
  if (home) return home;
  static std::vector<loop*>& orphans = *new std::vector<loop*>;
  std::lock_guard lock(registry_mutex);
  try {
    orphans.reserve(orphans.size() + 1);
    orphans.push_back(new loop);
  } catch (...) {
    return nullptr;
  }
  return home = orphans.back();
}

}  // namespace sluice::detail
