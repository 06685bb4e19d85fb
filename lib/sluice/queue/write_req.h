// write_req: pending chunks, the callback they are owed and the hook that
// links them into a write_queue. Requests are pooled per stream and recycled.
#pragma once

#include <boost/intrusive/slist_hook.hpp>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <system_error>
#include <variant>
#include <vector>

#include "sluice/base/function.h"

namespace sluice {

/// A write's or end's callback: called once, with no error when the chunk has
/// reached the sink, or with the reason it never will.
using write_cb = inline_function<void(std::error_code), 16>;

namespace detail {

/// A large chunk taken by ownership, so that it is never copied twice.
struct owned_chunk {
  std::variant<std::string, std::vector<std::byte>, std::shared_ptr<const void>> buffer;
};

/// One or more pending chunks of the same size, side by side in memory, with
/// the callback each of them is owed: consecutive writes whose callbacks are
/// the same function (inline_function::same_target()), or all empty, share
/// one request, so that a small write is a copy into the arena and a count,
/// as Node's afterWrite merges the ticks of one callback function
/// (afterWriteTickInfo.count). Chunks keep their bounds: a sink sees each
/// one, as it was written.
///
/// One cache line: a stream whose writes all carry different callbacks
/// touches a request per write three times (write, writev, callback).
struct alignas(64) write_req {
  boost::intrusive::slist_member_hook<> hook;
  union {
    owned_chunk* owned = nullptr;  // while the request is in use
    write_req* next_free;          // while it waits in its req_pool
  };
  // The first chunk's first byte: in the stream's arena unless `owned`
  // holds it (an owned chunk is alone in its request).
  const char* first = nullptr;
  // The size of each chunk (the low 48 bits: no chunk is larger than the
  // address space) and how many there are (the high 16: a run lies in one
  // arena block, whose chunks are at least a byte each).
  std::uint64_t size_count = 0;
  write_cb cb;  // 16-byte aligned: placed last so nothing pads the line

  static constexpr int count_shift = 48;
  static constexpr std::uint64_t one_chunk = std::uint64_t{1} << count_shift;
  static constexpr std::size_t max_count = (std::size_t{1} << (64 - count_shift)) - 1;

  /// Makes this request the one chunk `c`.
  void set(std::string_view c) noexcept {
    first = c.data();
    size_count = static_cast<std::uint64_t>(c.size()) | one_chunk;
  }
  /// The bytes of one chunk.
  std::size_t size() const noexcept { return static_cast<std::size_t>(size_count & (one_chunk - 1)); }
  /// The chunks (writes) in the request, at least one.
  std::size_t count() const noexcept { return static_cast<std::size_t>(size_count >> count_shift); }
  /// The bytes of all its chunks.
  std::size_t bytes() const noexcept { return size() * count(); }
  /// Chunk i, from 0.
  std::string_view chunk(std::size_t i) const noexcept { return {first + i * size(), size()}; }
  /// All its chunks, as one view.
  std::string_view run() const noexcept { return {first, bytes()}; }
  /// One more chunk of size() bytes, the one just past the last.
  void add_chunk() noexcept { size_count += one_chunk; }
  /// Drops the first n (< count()) chunks: another request took them.
  void drop_front(std::size_t n) noexcept {
    first += n * size();
    size_count -= n * one_chunk;
  }
};
static_assert(sizeof(write_req) == 64, "a write_req is one cache line");

}  // namespace detail
}  // namespace sluice
