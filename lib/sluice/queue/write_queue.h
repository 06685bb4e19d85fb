// write_queue: the FIFO of pending writes. Boost.Intrusive's slist with a
// cached last node gives O(1) push_back, pop_front and whole-queue splice;
// the nodes come from a per-stream pool, so steady-state writes allocate nothing.
#pragma once

#include <sys/uio.h>

#include <boost/intrusive/slist.hpp>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "sluice/base/assert.h"
#include "sluice/queue/byte_arena.h"
#include "sluice/queue/write_req.h"

namespace sluice::detail {

// A run of chunks lies in one arena block: its count always fits a request.
static_assert(byte_arena::block_size - byte_arena::header <= write_req::max_count);

using req_list = boost::intrusive::slist<
    write_req,
    boost::intrusive::member_hook<write_req, boost::intrusive::slist_member_hook<>, &write_req::hook>,
    boost::intrusive::cache_last<true>, boost::intrusive::linear<true>,
    boost::intrusive::constant_time_size<false>>;

/// Pending requests in order, with their count of chunks (writes, not
/// requests) and byte total.
class write_queue {
 public:
  write_queue() = default;
  write_queue(const write_queue&) = delete;
  write_queue& operator=(const write_queue&) = delete;
  // A request left here would never be called back: its owner disposes of
  // every request first (called back and returned to the pool).
  ~write_queue() { SLUICE_ASSERT(list_.empty() && count_ == 0 && bytes_ == 0); }

  bool empty() const noexcept { return list_.empty(); }
  /// The chunks queued: one per write.
  std::size_t size() const noexcept { return count_; }
  std::size_t bytes() const noexcept { return bytes_; }
  write_req& front() noexcept { return list_.front(); }
  const write_req* first() const noexcept { return list_.empty() ? nullptr : &list_.front(); }
  /// The newest request, or null.
  write_req* last() noexcept { return list_.empty() ? nullptr : &list_.back(); }
  /// The newest request, of a queue known not to be empty: one load.
  const write_req& back() const noexcept { return list_.back(); }

  /// Unlinks every request, oldest first, and hands each to `dispose`
  /// (Boost.Intrusive's clear_and_dispose): the queue is empty before the
  /// first call, so `dispose` may touch any other queue.
  template <class Disposer>
  void clear_and_dispose(Disposer&& dispose) noexcept {
    count_ = bytes_ = 0;
    list_.clear_and_dispose(dispose);
  }

  void push_back(write_req& r) noexcept {
    list_.push_back(r);
    count_ += r.count();
    bytes_ += r.bytes();
  }
  /// Counts `chunks` chunks of `bytes` bytes that joined the newest
  /// request's run, in the request and here (buffered_queue::settle()).
  void add_to_last(std::size_t chunks, std::size_t bytes) noexcept {
    list_.back().size_count += chunks * write_req::one_chunk;
    count_ += chunks;
    bytes_ += bytes;
  }
  write_req& pop_front() noexcept {
    SLUICE_ASSERT(!list_.empty());
    write_req& r = list_.front();
    list_.pop_front();
    count_ -= r.count();
    bytes_ -= r.bytes();
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

  /// Moves the first n chunks of this queue to the back of `to`: O(1) when
  /// n is the whole queue, else O(requests). Chunk n must begin a request
  /// (see split_at()).
  void move_front_to(write_queue& to, std::size_t n) noexcept {
    if (n >= count_) {
      to.splice_back(*this);
      return;
    }
    while (n > 0) {
      SLUICE_ASSERT(front().count() <= n);
      n -= front().count();
      to.push_back(pop_front());
    }
  }

  /// Makes chunk n (0 < n < size()) the first of a request: a request
  /// that holds chunks on both sides of it gives those before it to
  /// `front`, a fresh request from take(), which goes before it. Whatever
  /// the split, the queue holds the same chunks, in the same order.
  template <class Take>
  void split_at(std::size_t n, Take&& take) {
    SLUICE_ASSERT(n < count_);
    auto before = list_.before_begin();
    for (auto it = list_.begin();; before = it++) {
      const std::size_t c = it->count();
      if (n < c) {
        if (n == 0) return;
        // Only runs of copyable (or empty) callbacks hold more than one chunk.
        SLUICE_ASSERT(!it->cb || it->cb.copyable());
        write_req& front = take();
        front.first = it->first;
        front.size_count = static_cast<std::uint64_t>(it->size()) | (n * write_req::one_chunk);
        if (it->cb) front.cb = it->cb.copy();
        it->drop_front(n);
        list_.insert_after(before, front);
        return;
      }
      n -= c;
    }
  }

  using iterator = req_list::iterator;
  iterator begin() noexcept { return list_.begin(); }
  iterator end() noexcept { return list_.end(); }

  static const write_req* next(const write_req& r) noexcept {
    auto it = req_list::s_iterator_to(r);
    ++it;
    return &*it;  // callers bound the walk by a count, never by end()
  }

 private:
  // The counters are kept apart: side by side, GCC merges their updates into
  // one 16-byte store, and the next push's 8-byte load of either then stalls
  // on store forwarding (measured: 2x the cost of a push + pop).
  std::size_t count_ = 0;
  req_list list_;
  std::size_t bytes_ = 0;
};

/// Node's state.buffered: a write_queue whose newest request may be an open
/// run (open_run()). A chunk of the run's size copied at the arena's bump
/// pointer joins it by that copy alone (byte_arena::bump()): while a run is
/// open it ends where the arena's next chunk goes, so neither the request
/// nor the counters are touched, and what joined is counted (settle()) by
/// the queue's next other use. Whoever takes arena room for anything else
/// closes the run first (close_run()), or the next settle() would count
/// that room too. Only the one queue of a writable that takes writes has a
/// run, so the run's state (two words and the arena's address) is here and
/// not in every write_queue. Anything that hands the queue on as a
/// write_queue (a splice, a batch) takes closed(), which counts and closes
/// the run first.
class buffered_queue {
 public:
  /// `arena` is where the queue's small chunks are copied: the run ends at
  /// its next().
  explicit buffered_queue(const byte_arena& arena) noexcept : arena_(&arena) {}

  bool empty() const noexcept { return q_.empty(); }
  std::size_t size() const noexcept {
    settle();
    return q_.size();
  }
  std::size_t bytes() const noexcept {
    settle();
    return q_.bytes();
  }
  /// The newest request, or null; counted (no run stays open over it).
  write_req* last() noexcept {
    close_run();
    return q_.last();
  }
  void push_back(write_req& r) noexcept {
    close_run();
    q_.push_back(r);
  }
  write_req& pop_front() noexcept {
    close_run();
    return q_.pop_front();
  }
  /// The queue, its run counted and closed: for a splice, a move, a batch.
  write_queue& closed() noexcept {
    close_run();
    return q_;
  }
  /// Counts one chunk more in the newest request, copied right after its
  /// last one (what a closed run's join is: see writable::write_or_buffer()).
  void add_to_last(std::size_t size) noexcept {
    close_run();
    q_.add_to_last(1, size);
  }

  /// Makes the newest request, `r` (one chunk or more, in the arena, ending
  /// at the arena's next(), with a callback empty or copyable), the open run.
  void open_run(const write_req& r) noexcept {
    SLUICE_ASSERT(open_key_ == SIZE_MAX && &r == q_.last() && !r.owned && r.size() > 0 &&
                  (!r.cb || r.cb.copyable()) && r.first + r.bytes() == end());
    open_key_ = run_key(r.size(), static_cast<bool>(r.cb));
    // The last address a chunk of the run can start at and still end in
    // the block: the room check of a join is then one compare.
    open_last_ = reinterpret_cast<std::uintptr_t>(arena_->next()) + arena_->room() - r.size();
  }
  /// Closes the open run, if any, counting what joined it: a chunk that
  /// comes after is the start of another request (or joins this one by
  /// add_to_last()).
  void close_run() noexcept {
    settle();
    open_key_ = SIZE_MAX;
  }

  /// What a chunk must match to join a run: its size, and whether it has
  /// a callback (which must then be the run's: same_target()). A write
  /// without one compares its size alone, and never reads the request.
  static constexpr std::size_t called_back = std::size_t{1} << 63;
  static constexpr std::size_t run_key(std::size_t size, bool has_cb) noexcept {
    return size | (has_cb ? called_back : 0);
  }
  /// The open run's key; none is SIZE_MAX (no chunk has it).
  std::size_t open_key() const noexcept { return open_key_; }
  /// Whether a chunk of key `key` (run_key()) copied at `next`, the
  /// arena's next(), joins the open run: the key is the run's, and the
  /// chunk fits in the arena's block. Its callback, if any, must also be the
  /// run's (open_cb()). The caller passes `next`, which it then bumps.
  bool joins(std::size_t key, const std::byte* next) const noexcept {
    SLUICE_ASSERT(next == arena_->next());
    return key == open_key_ && reinterpret_cast<std::uintptr_t>(next) <= open_last_;
  }
  /// The open run's request (only while a run is open).
  const write_req& open_req() const noexcept { return q_.back(); }
  /// Its callback, empty or copyable(): what a joining write's must match.
  const write_cb& open_cb() const noexcept { return q_.back().cb; }

 private:
  // Where the open run ends: the arena's bump pointer.
  const char* end() const noexcept { return reinterpret_cast<const char*>(arena_->next()); }
  // The run's request counts the chunks up to its own end (first + bytes);
  // those joined since lie between there and the arena's next().
  void settle() const noexcept {
    if (open_key_ == SIZE_MAX) return;
    const write_req& r = q_.back();
    const char* counted = r.first + r.bytes();
    if (end() == counted) return;
    const auto bytes = static_cast<std::size_t>(end() - counted);
    q_.add_to_last(bytes / r.size(), bytes);
  }

  mutable write_queue q_;  // mutable: settle() counts in const reads
  std::size_t open_key_ = SIZE_MAX;
  std::uintptr_t open_last_ = 0;
  const byte_arena* arena_;
};

/// Recycles write_reqs and the arena bytes of small chunks. Requests are made
/// in slabs and never freed before the stream; the pool grows to the largest
/// number of requests ever pending at once. Free requests are chained
/// through write_req::next_free rather than a Boost list: taking one is a
/// load and a store, with none of a list's checks.
class req_pool {
 public:
  req_pool() = default;
  req_pool(const req_pool&) = delete;
  req_pool& operator=(const req_pool&) = delete;

  [[gnu::always_inline]] write_req& acquire() {
    if (!free_) [[unlikely]]
      grow();
    write_req& r = *free_;
    free_ = r.next_free;
    r.owned = nullptr;
    return r;
  }
  /// Returns a request that is linked nowhere.
  void release(write_req& r) noexcept {
    clear(r);
    r.next_free = free_;
    free_ = &r;
  }

  /// Empties `q` in one walk: for each request, oldest first, `each(r)` (its
  /// callbacks, say), then what clear() does, and back to the pool, where
  /// the run keeps its order (the next writes reuse it front to back). `each`
  /// may write again: `q` is already empty then, and the run joins the pool
  /// only at the end.
  template <class Each>
  void recycle_all(write_queue& q, Each&& each) noexcept {
    write_req* head = nullptr;
    write_req** link = &head;
    q.clear_and_dispose([&](write_req* r) {
      each(*r);
      clear_quick(*r);
      *link = r;
      link = &r->next_free;
    });
    flush_released();
    *link = free_;
    free_ = head;
  }
  /// Returns every request of `q`, which is left empty. The requests must
  /// have been emptied by clear_quick() (or clear()) already.
  void release_all(write_queue& q) noexcept {
    q.clear_and_dispose([this](write_req* r) {
      r->next_free = free_;
      free_ = r;
    });
  }

  /// Drops what a request holds: its arena bytes, owned buffer and callback.
  void clear(write_req& r) noexcept {
    clear_quick(r);
    flush_released();
  }

  /// clear() for a run of requests: arena bytes are given back per block, not
  /// per request. Call flush_released() after the run.
  [[gnu::always_inline]] void clear_quick(write_req& r) noexcept {
    if (r.owned) [[unlikely]] {
      delete r.owned;
      r.owned = nullptr;
    } else if (const std::size_t n = r.bytes()) {
      byte_arena::block* b = byte_arena::block_of(r.first);
      if (b != run_block_) {
        flush_released();
        run_block_ = b;
      }
      run_bytes_ += n;
    }
    r.cb = nullptr;
  }
  /// Moves the first n chunks of `from` to the back of `to`, splitting the
  /// request that holds chunks on both sides of chunk n.
  void move_front(write_queue& from, write_queue& to, std::size_t n) {
    if (n > 0 && n < from.size()) from.split_at(n, [this]() -> write_req& { return acquire(); });
    from.move_front_to(to, n);
  }

  void flush_released() noexcept {
    if (run_block_) arena.release(run_block_, run_bytes_);
    run_block_ = nullptr;
    run_bytes_ = 0;
  }

  /// Gives the first slab back to this thread's slab_pool when it is the
  /// only one and all its requests are free: a quiet stream (never more
  /// than first_slab writes pending) then holds no request between its
  /// writes, as it holds no arena block. Call it where the stream has
  /// nothing pending; the next write takes a slab from the pool again.
  void release_idle() noexcept {
    if (slabs_.size() != 1) return;  // a busy stream keeps what it grew to
    std::size_t free = 0;
    for (const write_req* r = free_; r && free <= first_slab; r = r->next_free) ++free;
    if (free != first_slab) return;
    free_ = nullptr;
    slab_pool::put(slabs_.back().release());
    slabs_.clear();  // keeps its capacity: the next grow() allocates nothing
  }

  /// Free first slabs (first_slab requests each), per thread, as
  /// byte_arena's block_pool keeps blocks; past max_slabs they are freed.
  /// Defined in write_queue.cc.
  struct slab_pool {
    static constexpr std::size_t max_slabs = 256;
    static write_req* take() noexcept;
    static void put(write_req* slab) noexcept;
    static std::size_t size() noexcept;
    static void trim() noexcept;
  };
  static constexpr std::size_t first_slab = 4;

  byte_arena arena;

 private:
  // Slabs of 4 (256 B: what a quiet connection keeps while it writes), then
  // 64, 128, 192... requests, chained in address order.
  [[gnu::noinline]] void grow() {
    const std::size_t n = slabs_.empty() ? first_slab : 64 * slabs_.size();
    write_req* pooled = slabs_.empty() ? slab_pool::take() : nullptr;
    auto slab = std::unique_ptr<write_req[]>(pooled ? pooled : new write_req[n]);
    for (std::size_t i = n; i-- > 0;) {
      slab[i].next_free = free_;
      free_ = &slab[i];
    }
    slabs_.push_back(std::move(slab));
  }

  std::vector<std::unique_ptr<write_req[]>> slabs_;
  write_req* free_ = nullptr;
  byte_arena::block* run_block_ = nullptr;  // see clear_quick()
  std::size_t run_bytes_ = 0;
};

}  // namespace sluice::detail
