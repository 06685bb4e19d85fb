// print(): write() for text that fmt makes, formatted straight into the
// stream's arena through fmt's public API. The runtime path is here; the
// compiled one is a template (print_compiled.h) over the same room.
#include <algorithm>
#include <cstring>

#include <fmt/core.h>

#include "sluice/queue/byte_arena.h"
#include "sluice/stream/print.h"
#include "sluice/stream/writable.h"

namespace sluice {

namespace {
// A line starts in what is left of the arena's block, unless less than this
// is left: then in a fresh block. So a line shorter than this is never
// formatted twice (see vprint()).
constexpr std::size_t print_min_room = 1024;

// Apart from print_commit(), so that the common case there is a plain jump
// to write_formatted(), with no stack frame to set up for this one.
[[gnu::noinline]] bool write_heap_line(writable& w, std::string& line, std::size_t size, write_cb&& cb) {
  line.resize(size);
  return w.write(std::move(line), std::move(cb));
}
}  // namespace

// The room moves to a fresh block, or, past the largest arena chunk, to a
// string of its own, which then grows as strings do.
void detail::print_room::grow(std::size_t size, std::size_t want) {
  if (heap.empty()) {
    if (want <= byte_arena::max_chunk) {
      std::size_t room;
      char* const p = reinterpret_cast<char*>(arena->reserve(want, room));
      // The block may be the same one, drained and started over: overlap.
      std::memmove(p, data, size);
      data = p;
      capacity = std::min(room, byte_arena::max_chunk);
      return;
    }
    heap.resize(std::max(want, 2 * byte_arena::max_chunk));
    std::memcpy(heap.data(), data, size);
  } else {
    heap.resize(std::max(want, 2 * heap.size()));
  }
  data = heap.data();
  capacity = heap.size();
}

// The room print() formats into: nothing is handed out of the arena until
// print_commit(). False when the stream takes no more writes (reject()).
bool writable::print_start(detail::print_room& room) {
  if (state_.has(detail::wflag::ending | detail::wflag::destroyed)) return false;
  std::size_t left;
  room.data = reinterpret_cast<char*>(pool_.arena.reserve(print_min_room, left));
  room.capacity = std::min(left, detail::byte_arena::max_chunk);
  room.arena = &pool_.arena;
  return true;
}

// The formatted line becomes a request like any small chunk, or, when it
// went to the heap, a chunk the request owns.
bool writable::print_commit(detail::print_room& room, std::size_t size, write_cb&& cb) {
  if (!room.heap.empty()) [[unlikely]]
    return write_heap_line(*this, room.heap, size, std::move(cb));
  if (state_.has(detail::wflag::capped)) [[unlikely]] {
    if (over_cap(size)) return refuse(std::move(cb));  // the room is left as it was
  }
  return write_formatted({room.data, size}, std::move(cb));
}

// fmt::vformat_to_n() writes into the room directly and tells the line's
// whole size even when it does not fit; such a line (longer than the room
// left in the block, so at least print_min_room bytes, or longer than any
// arena chunk) is formatted once more into room of that size. Its
// formatters run twice; the loop covers one that writes more the second
// time.
[[gnu::flatten]] bool writable::vprint(fmt::string_view format, fmt::format_args args, write_cb cb) {
  detail::print_room room;
  if (!print_start(room)) return reject(std::move(cb));
  std::size_t size = fmt::vformat_to_n(room.data, room.capacity, format, args).size;
  while (size > room.capacity) [[unlikely]] {
    room.grow(0, size);
    size = fmt::vformat_to_n(room.data, room.capacity, format, args).size;
  }
  return print_commit(room, size, std::move(cb));
}

}  // namespace sluice
