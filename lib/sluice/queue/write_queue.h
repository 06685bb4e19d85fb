// write_queue: the FIFO of pending writes. Boost.Intrusive's slist with a
// cached last node gives O(1) push_back, pop_front and whole-queue splice;
// the nodes come from a per-stream pool, so steady-state writes allocate nothing.
#pragma once

#include <sys/uio.h>

#include <boost/intrusive/slist.hpp>
#include <cstddef>
#include <memory>
#include <vector>

#include "sluice/queue/write_req.h"

namespace sluice::detail {

using req_list = boost::intrusive::slist<
    write_req,
    boost::intrusive::member_hook<write_req, boost::intrusive::slist_member_hook<>, &write_req::hook>,
    boost::intrusive::cache_last<true>, boost::intrusive::linear<true>,
    boost::intrusive::constant_time_size<false>>;

/// Pending requests in order, with their count and byte total.
class write_queue {
 public:
  write_queue() = default;
  write_queue(const write_queue&) = delete;
  write_queue& operator=(const write_queue&) = delete;
  ~write_queue() { list_.clear(); }  // callers dispose first; this only unlinks

  bool empty() const noexcept { return list_.empty(); }
  std::size_t size() const noexcept { return count_; }
  std::size_t bytes() const noexcept { return bytes_; }
  write_req& front() noexcept { return list_.front(); }
  const write_req* first() const noexcept { return list_.empty() ? nullptr : &list_.front(); }

  void push_back(write_req& r) noexcept {
    list_.push_back(r);
    ++count_;
    bytes_ += r.data.size();
  }
  write_req& pop_front() noexcept {
    write_req& r = list_.front();
    list_.pop_front();
    --count_;
    bytes_ -= r.data.size();
    return r;
  }
  /// Moves every request of `other` to the back of this queue, in O(1).
  void splice_back(write_queue& other) noexcept {
    if (other.empty()) return;
    list_.splice_after(list_.last(), other.list_);
    count_ += other.count_;
    bytes_ += other.bytes_;
    other.count_ = other.bytes_ = 0;
  }

  static const write_req* next(const write_req& r) noexcept {
    auto it = req_list::s_iterator_to(r);
    ++it;
    return &*it;  // callers bound the walk by a count, never by end()
  }

 private:
  req_list list_;
  std::size_t count_ = 0;
  std::size_t bytes_ = 0;
};

/// Recycles write_reqs and the arena bytes of small chunks. Requests are made
/// in slabs and never freed before the stream; the pool grows to the largest
/// number of requests ever pending at once.
class req_pool {
 public:
  req_pool() = default;
  req_pool(const req_pool&) = delete;
  req_pool& operator=(const req_pool&) = delete;
  ~req_pool() { free_.clear(); }

  write_req& acquire() {
    if (free_.empty()) grow();
    write_req& r = free_.front();
    free_.pop_front();
    return r;
  }
  /// Returns a request that is linked nowhere; its callback must be gone.
  void release(write_req& r) noexcept {
    if (r.block) {
      arena.release(r.block, r.data.size());
      r.block = nullptr;
    }
    if (r.owned.index() != 0) r.owned = std::monostate{};
    r.cb = nullptr;
    free_.push_front(r);
  }

  byte_arena arena;

 private:
  void grow() {
    const std::size_t n = slabs_.empty() ? 16 : 64 * slabs_.size();
    auto slab = std::make_unique<write_req[]>(n);
    for (std::size_t i = 0; i < n; ++i) free_.push_front(slab[i]);
    slabs_.push_back(std::move(slab));
  }

  std::vector<std::unique_ptr<write_req[]>> slabs_;
  req_list free_;
};

}  // namespace sluice::detail
