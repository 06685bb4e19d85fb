// shutdown: the streams that write their pending bytes when a program ends
// without ending them (exit(), return from main, a thread that exits).
#pragma once

namespace sluice {

class writable;
class loop;

namespace detail {

/// A writable's place in the registry of live streams whose sink can write
/// synchronously (sink::has_write_sync()). A member of the writable, linked
/// by its constructor and unlinked by its destructor, so that the write path
/// pays nothing for it.
///
/// What the registry does with them, in sluice's own guarantee (Node has no
/// such moment; see "Shutdown and crashes" in the README):
///
/// - When a loop is destroyed (a thread's loop::current() at thread exit,
///   and the main thread's at exit() or return from main, before static
///   objects go), each stream on it writes what it holds, blocking, and
///   moves to a loop of its own that never runs.
/// - At exit(), an atexit handler makes the streams built on the exiting
///   thread write what they hold (for loops that are not destroyed, such as
///   one on main's stack).
///
/// Writing what a stream holds is writable::write_pending_sync(): the rest
/// of the sink call in flight, then every buffered request, with no
/// callback and no event. The destructor pays the callbacks later, if it
/// runs. Streams of other threads, which may be running, are not touched.
struct shutdown_link {
  shutdown_link* prev = nullptr;
  shutdown_link* next = nullptr;
  writable* stream = nullptr;
  const void* thread = nullptr;  // the thread that built the stream
};

struct shutdown_registry {
  static void add(shutdown_link& link, writable& w) noexcept;
  static void remove(shutdown_link& link) noexcept;
  /// Called by loop::~loop().
  static void loop_gone(loop& l) noexcept;
  /// The atexit handler.
  static void at_exit() noexcept;
};

}  // namespace detail
}  // namespace sluice
