// The registry of streams to write out at exit and when their loop goes;
// see shutdown.h. A list under one mutex, touched only when a stream is
// built or destroyed, a loop is destroyed, or the program exits.
#include "sluice/shutdown.h"

#include <cstdlib>
#include <mutex>
#include <vector>

#include "sluice/errors.h"
#include "sluice/loop.h"
#include "sluice/sinks/sink.h"
#include "sluice/stream/writable.h"

namespace sluice {

namespace detail {

namespace {

// Constant-initialized and trivially destroyed: usable from atexit handlers
// and static destructors in any order.
constinit std::mutex registry_mutex;
constinit shutdown_link* registry_head = nullptr;
constinit bool handler_installed = false;

thread_local char thread_marker;

// Streams whose loop went first move to a loop of their own, which never
// runs and is never freed: their later calls (a write, the destructor's
// cancel()) stay defined, and one thread's orphans share no loop with
// another's. The list keeps them reachable, for leak checkers. Called with
// registry_mutex held.
loop* orphan_loop() noexcept {
  static std::vector<loop*>& orphans = *new std::vector<loop*>;
  try {
    orphans.reserve(orphans.size() + 1);
    orphans.push_back(new loop);
    return orphans.back();
  } catch (...) {
    return nullptr;
  }
}

}  // namespace

void shutdown_registry::add(shutdown_link& link, writable& w) noexcept {
  link.stream = &w;
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
  if (!link.stream) return;
  std::lock_guard lock(registry_mutex);
  if (link.prev)
    link.prev->next = link.next;
  else
    registry_head = link.next;
  if (link.next) link.next->prev = link.prev;
  link = {};
}

// Oldest streams first: the list is newest first, so walk it from the tail.
void shutdown_registry::loop_gone(loop& l) noexcept {
  std::lock_guard lock(registry_mutex);
  shutdown_link* tail = registry_head;
  while (tail && tail->next) tail = tail->next;
  loop* home = nullptr;
  for (shutdown_link* p = tail; p; p = p->prev) {
    if (&p->stream->event_loop() != &l) continue;
    if (!home && !(home = orphan_loop())) return;
    p->stream->write_pending_sync();
    p->stream->rehome(*home);
  }
}

void shutdown_registry::at_exit() noexcept {
  std::lock_guard lock(registry_mutex);
  shutdown_link* tail = registry_head;
  while (tail && tail->next) tail = tail->next;
  for (shutdown_link* p = tail; p; p = p->prev)
    if (p->thread == &thread_marker) p->stream->write_pending_sync();
}

}  // namespace detail
}  // namespace sluice
