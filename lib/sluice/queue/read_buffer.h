// read_buffer: the chunks a readable holds until they are read (Node's
// state.buffer and state.bufferIndex). Boost.Intrusive's slist with a cached
// last node gives O(1) push_back, push_front (for unshift) and pop_front; a
// partial read moves an offset into the head chunk instead of copying the rest.
#pragma once

#include <boost/intrusive/slist.hpp>
#include <boost/intrusive/slist_hook.hpp>
#include <cassert>
#include <cstddef>
#include <string>
#include <string_view>
#include <utility>

namespace sluice::detail {

/// One buffered chunk. `offset` bytes of `data` have already been read.
struct read_chunk {
  boost::intrusive::slist_member_hook<> hook;
  std::string data;
  std::size_t offset = 0;

  std::string_view view() const noexcept { return std::string_view(data).substr(offset); }
};

using read_chunk_list = boost::intrusive::slist<
    read_chunk,
    boost::intrusive::member_hook<read_chunk, boost::intrusive::slist_member_hook<>, &read_chunk::hook>,
    boost::intrusive::cache_last<true>, boost::intrusive::linear<true>,
    boost::intrusive::constant_time_size<true>>;

/// The FIFO of unread chunks. It counts chunks, not bytes: the readable's
/// state keeps the length, as Node's does. Nodes are recycled, so a steady
/// stream allocates only the chunks' own bytes.
class read_buffer {
 public:
  read_buffer() = default;
  read_buffer(const read_buffer&) = delete;
  read_buffer& operator=(const read_buffer&) = delete;
  ~read_buffer() {
    clear();
    free_.clear_and_dispose([](read_chunk* c) { delete c; });
  }

  bool empty() const noexcept { return list_.empty(); }
  /// Chunks held.
  std::size_t size() const noexcept { return list_.size(); }

  void push_back(std::string&& chunk) { list_.push_back(make(std::move(chunk))); }
  /// Node: addChunk(..., addToFront = true), for unshift().
  void push_front(std::string&& chunk) { list_.push_front(make(std::move(chunk))); }

  /// The unread bytes of the oldest chunk.
  std::string_view front() const noexcept {
    assert(!empty());
    return list_.front().view();
  }

  /// Removes the oldest chunk and returns its unread bytes. A chunk never
  /// partly read is moved out, not copied; the rest of a partly read one
  /// moves to the front of its own buffer (no allocation).
  std::string take_front() {
    assert(!empty());
    read_chunk& c = list_.front();
    list_.pop_front();
    std::string out;
    if (c.offset != 0) c.data.erase(0, c.offset);
    out = std::move(c.data);
    recycle(c);
    return out;
  }

  /// Marks the first n bytes of the oldest chunk read; n is less than its
  /// unread size, so the chunk stays. Nothing is copied.
  void consume_front(std::size_t n) noexcept {
    assert(!empty() && n < list_.front().view().size());
    list_.front().offset += n;
  }

  /// Drops every chunk.
  void clear() noexcept {
    while (!list_.empty()) {
      read_chunk& c = list_.front();
      list_.pop_front();
      recycle(c);
    }
  }

 private:
  read_chunk& make(std::string&& chunk) {
    read_chunk* c;
    if (!free_.empty()) {
      c = &free_.front();
      free_.pop_front();
    } else {
      c = new read_chunk;
    }
    c->data = std::move(chunk);
    c->offset = 0;
    return *c;
  }
  void recycle(read_chunk& c) noexcept {
    // Keep no bytes alive in a spare node, and only a few spare nodes.
    std::string().swap(c.data);
    c.offset = 0;
    if (free_.size() < max_free) {
      free_.push_front(c);
    } else {
      delete &c;
    }
  }

  static constexpr std::size_t max_free = 64;
  read_chunk_list list_;
  read_chunk_list free_;
};

}  // namespace sluice::detail
