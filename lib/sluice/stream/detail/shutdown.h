// shutdown: the streams that write their pending bytes when a program ends
// without ending them (exit(), return from main, a thread that exits).
#pragma once

namespace sluice {

class loop;

namespace detail {

/// sluice's own guarantee (Node has no such moment; see "Shutdown and
/// crashes" in docs/shutdown.md), for writables whose sink can write
/// synchronously (a sync_sink, see sinks/sink.h):
///
/// - When a loop is destroyed (a thread's loop::current() at thread exit,
///   and the main thread's at exit() or return from main, before static
///   objects go), each stream on it writes what it holds, blocking, and
///   moves to a loop of its thread's own that never runs. The loop's close hooks do
///   this (loop::close_hook); orphan_loop() gives that new home.
/// - At exit(), an atexit handler makes the streams built on the exiting
///   thread write what they hold (for loops that are not destroyed, such as
///   one on main's stack). The registry below lists them.
///
/// Writing what a stream holds is the rest of the sink call in flight, then
/// every buffered request, with no callback and no event: the destructor
/// pays the callbacks later, if it runs. Streams of other threads, which may
/// be running, are not touched. Nothing of this runs per write: a stream is
/// linked when it is built and unlinked when it is destroyed.
struct shutdown_link {
  void (*at_exit)(shutdown_link& link) noexcept = nullptr;
  void* owner = nullptr;
  shutdown_link* prev = nullptr;
  shutdown_link* next = nullptr;
  const void* thread = nullptr;  // the thread that linked it
};

struct shutdown_registry {
  /// Links `link` (its at_exit and owner set) for the calling thread.
  static void add(shutdown_link& link) noexcept;
  static void remove(shutdown_link& link) noexcept;
  /// The atexit handler: calls at_exit of the exiting thread's links,
  /// oldest first.
  static void at_exit() noexcept;
  /// A loop that never runs and is never freed, for the streams of a loop
  /// that is going: one per thread. Null if none can be made.
  static loop* orphan_loop() noexcept;
};

}  // namespace detail
}  // namespace sluice
