// byte_arena: where small chunks are copied when they are written. Pending
// chunks of one stream sit side by side in 64 KiB blocks, so a batch of small
// writes reaches writev() as a few large iovecs instead of one per chunk. A
// stream holds a block only while it has chunks pending: once the last one
// is released the block goes back to its thread's block_pool, where the next
// write (of this stream or another) takes it warm. A server's idle
// connections then hold no block at all, and a steady stream still
// allocates nothing.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <new>
#include <utility>

namespace sluice::detail {

class byte_arena {
 public:
  /// Blocks are aligned to their size, so the block of any byte is found by
  /// masking its address: requests need not store it.
  static constexpr std::size_t block_size = 64 * 1024;
  /// Chunks up to this size are copied here; larger ones are owned elsewhere.
  static constexpr std::size_t max_chunk = 4096;

  struct block {
    std::size_t used;      // bytes handed out, header included (see used())
    std::size_t released;  // bytes given back; the block is free when equal to used
    block* next_spare;     // while the block waits in the pool: the next one
    std::size_t touched;   // the most it ever had in use: its resident pages (block_pool)
  };
  static constexpr std::size_t header = 64;  // keeps the chunks cache-line aligned

  byte_arena() = default;
  byte_arena(const byte_arena&) = delete;
  byte_arena& operator=(const byte_arena&) = delete;
  ~byte_arena() {
    // Every allocation must have been released (requests outlive no
    // stream): a tail left is one reserve() gave room in and nothing took.
    if (block* t = tail()) {
      t->used = used(t);
      block_pool::put(t);
    }
  }

  /// Whether a block is held: only while chunks are pending (or room was
  /// reserved and not committed).
  bool holds_block() const noexcept { return next_ != nullptr; }

  /// 0 < n <= max_chunk bytes, contiguous with the previous allocation when
  /// they fit in the same block.
  std::byte* allocate(std::size_t n) {
    if (n > room()) [[unlikely]]
      next_block();
    return bump(n);
  }

  /// Where the next allocation goes when it fits in room() (null while no
  /// block is held), and how many bytes fit there.
  std::byte* next() const noexcept { return next_; }
  std::size_t room() const noexcept {
    // To the end of next_'s block (which next_ may be at: it is then the
    // next block's start, so the block is that of next_ - 1); 0 while idle.
    const auto p = reinterpret_cast<std::uintptr_t>(next_);
    return ((p - 1) | (block_size - 1)) + 1 - p;
  }
  /// allocate(n) for n <= room(): what a write that joins a run of chunks
  /// does, having checked the room itself.
  std::byte* bump(std::size_t n) noexcept {
    std::byte* p = next_;
    next_ += n;
    return p;
  }

  /// allocate(n), then copies n bytes of `src` there. The chunks of a log
  /// line (16 to 64 bytes) are copied as two fixed-size blocks that overlap
  /// in the middle: a few vector moves, without a call into libc.
  [[gnu::always_inline]] std::byte* copy(const char* src, std::size_t n) {
    std::byte* dst = allocate(n);
    copy_to(dst, src, n);
    return dst;
  }
  /// The copy of copy(), into room already taken. Called last by the hot
  /// path: a std::byte store may alias anything, so whatever the caller
  /// reads after it is read again from memory.
  /// 33 to 64 bytes first, in one unsigned compare: a line's usual size.
  [[gnu::always_inline]] static void copy_to(std::byte* dst, const char* src, std::size_t n) noexcept {
    if (n - 33 < 32) [[likely]] {
      // Four 16-byte loads, then their stores: each a single move with
      // its address in the instruction.
      using v16 = unsigned char __attribute__((vector_size(16)));
      v16 a, b, c, d;
      std::memcpy(&a, src, 16);
      std::memcpy(&b, src + 16, 16);
      std::memcpy(&c, src + n - 32, 16);
      std::memcpy(&d, src + n - 16, 16);
      std::memcpy(dst, &a, 16);
      std::memcpy(dst + 16, &b, 16);
      std::memcpy(dst + n - 32, &c, 16);
      std::memcpy(dst + n - 16, &d, 16);
    } else if (n >= 16 && n <= 32) {
      std::memcpy(dst, src, 16);
      std::memcpy(dst + n - 16, src + n - 16, 16);
    } else {
      std::memcpy(dst, src, n);
    }
  }

  /// Room to write in place (print() formats straight into the arena): at
  /// least `min` bytes, all that is left of the current block. Nothing is
  /// handed out until commit(n), which must follow before any allocate().
  std::byte* reserve(std::size_t min, std::size_t& room_left) {
    if (min > room()) next_block();
    room_left = room();
    return next_;
  }
  void commit(std::size_t n) noexcept { next_ += n; }

  static block* block_of(const void* p) noexcept {
    return reinterpret_cast<block*>(reinterpret_cast<std::uintptr_t>(p) & ~(block_size - 1));
  }

  /// Gives back n bytes of `b`. Requests complete in order, but nothing here
  /// depends on it: a block is recycled once all of it has been released.
  /// A block all given back goes to the pool, the tail too: the stream has
  /// nothing pending, and an idle stream should hold no block.
  void release(block* b, std::size_t n) noexcept {
    b->released += n;
    if (b->released != used(b) - header) return;
    if (b == tail()) {
      b->used = used(b);  // the pool reads it: the pages this use touched
      next_ = nullptr;
    }
    block_pool::put(b);
  }

  /// The blocks freed by the streams of one thread (so of one loop), kept for
  /// the next stream that writes. Blocks are mapped from the kernel by this
  /// pool, 16 at a time (an aligned_alloc of 64 KiB aligned to 64 KiB is a
  /// 132 KiB mmap in glibc, and its free a munmap: a TLB shootdown in a
  /// threaded process), so a block's pages are resident only once written:
  /// a stream that writes 100 bytes costs one page, not 64 KiB. The pool is
  /// therefore bounded by the pages its blocks have touched (max_bytes, what
  /// it adds to the RSS), not by a count: a server whose 100 connections
  /// each take a block and give it back keeps all 100 for a few hundred KiB,
  /// where 16 blocks would unmap and map one per round trip. Past the bound
  /// (or max_blocks of address space) blocks are unmapped. Defined in
  /// byte_arena.cc: one pool per thread for the library and the program alike.
  struct block_pool {
    static constexpr std::size_t max_bytes = 1024 * 1024;
    static constexpr std::size_t max_blocks = 1024;
    /// A pooled block, or a fresh one (nullptr when the kernel refuses).
    static block* take() noexcept;
    /// Keeps `b` (a block nothing is cut from any more), or unmaps it.
    static void put(block* b) noexcept;
    /// Blocks waiting in this thread's pool (given back, and mapped unused).
    static std::size_t size() noexcept;
    /// Bytes the waiting blocks have touched, rounded to pages.
    static std::size_t touched_bytes() noexcept;
    /// How many times this thread has mapped blocks from the kernel.
    static std::size_t maps() noexcept;
    /// Unmaps every block waiting in this thread's pool.
    static void trim() noexcept;
  };

 private:
  // The block chunks are cut from (next_'s, see room()); null while idle.
  block* tail() const noexcept { return next_ ? block_of(next_ - 1) : nullptr; }
  // The bytes handed out of `b`, header included. The tail's count is
  // next_: a write then bumps one pointer in the stream, not a count in the
  // block's header (another cache line, which the chunk's bytes may alias).
  std::size_t used(const block* b) const noexcept {
    return b == tail() ? static_cast<std::size_t>(next_ - reinterpret_cast<const std::byte*>(b)) : b->used;
  }

  [[gnu::noinline]] void next_block() {
    block* const t = tail();
    if (t && t->released == used(t) - header) {
      // Drained: reused in place. Its pages stay resident, for the pool's
      // count when it goes back (block_pool::put()).
      t->touched = std::max(t->touched, used(t));
      next_ = reinterpret_cast<std::byte*>(t) + header;
      t->released = 0;
      return;
    }
    if (t) t->used = used(t);  // the old tail is freed by its last release()
    block* fresh = block_pool::take();
    if (!fresh) throw std::bad_alloc();
    fresh->released = 0;
    next_ = reinterpret_cast<std::byte*>(fresh) + header;
  }

  // Where the next chunk goes, in the tail block (see tail()); null while
  // idle. The one word an arena costs a stream.
  std::byte* next_ = nullptr;
};

}  // namespace sluice::detail
