// byte_arena: where small chunks are copied when they are written. Pending
// chunks of one stream sit side by side in 64 KiB blocks, so a batch of small
// writes reaches writev() as a few large iovecs instead of one per chunk, and
// a steady stream reuses one warm block instead of allocating.
#pragma once

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
    std::size_t used;      // bytes handed out, header included
    std::size_t released;  // bytes given back; the block is free when equal to used
    block* next_spare;     // while the block is a spare: the next one
  };
  static constexpr std::size_t header = 64;  // keeps the chunks cache-line aligned

  byte_arena() = default;
  byte_arena(const byte_arena&) = delete;
  byte_arena& operator=(const byte_arena&) = delete;
  ~byte_arena() {
    // Every allocation must have been released: requests outlive no stream.
    std::free(tail_);
    while (spares_) std::free(std::exchange(spares_, spares_->next_spare));
  }

  /// 0 < n <= max_chunk bytes, contiguous with the previous allocation when
  /// they fit in the same block.
  std::byte* allocate(std::size_t n) {
    if (!tail_ || tail_->used + n > block_size) [[unlikely]]
      next_block();
    std::byte* p = reinterpret_cast<std::byte*>(tail_) + tail_->used;
    tail_->used += n;
    return p;
  }

  /// allocate(n), then copies n bytes of `src` there. The chunks of a log
  /// line (16 to 64 bytes) are copied as two fixed-size blocks that overlap
  /// in the middle: a few vector moves, without a call into libc.
  [[gnu::always_inline]] std::byte* copy(const char* src, std::size_t n) {
    std::byte* dst = allocate(n);
    if (n >= 16 && n <= 64) {
      if (n > 32) {
        std::memcpy(dst, src, 32);
        std::memcpy(dst + n - 32, src + n - 32, 32);
      } else {
        std::memcpy(dst, src, 16);
        std::memcpy(dst + n - 16, src + n - 16, 16);
      }
    } else {
      std::memcpy(dst, src, n);
    }
    return dst;
  }

  /// Room to write in place (print() formats straight into the arena): at
  /// least `min` bytes, all that is left of the current block. Nothing is
  /// handed out until commit(n), which must follow before any allocate().
  std::byte* reserve(std::size_t min, std::size_t& room) {
    if (!tail_ || tail_->used + min > block_size) next_block();
    room = block_size - tail_->used;
    return reinterpret_cast<std::byte*>(tail_) + tail_->used;
  }
  void commit(std::size_t n) noexcept { tail_->used += n; }

  static block* block_of(const void* p) noexcept {
    return reinterpret_cast<block*>(reinterpret_cast<std::uintptr_t>(p) & ~(block_size - 1));
  }

  /// Gives back n bytes of `b`. Requests complete in order, but nothing here
  /// depends on it: a block is recycled once all of it has been released.
  void release(block* b, std::size_t n) noexcept {
    b->released += n;
    if (b->released != b->used - header) return;
    if (b == tail_) {
      b->used = header;  // the next chunks start again at the front of a warm block
      b->released = 0;
    } else if (spare_count_ < max_spares) {
      b->next_spare = spares_;
      spares_ = b;
      ++spare_count_;
    } else {
      std::free(b);
    }
  }

 private:
  [[gnu::noinline]] void next_block() {
    if (tail_ && tail_->released == tail_->used - header) {
      tail_->used = header;  // drained: reuse in place
      tail_->released = 0;
      return;
    }
    block* fresh = spares_;
    if (fresh) {
      spares_ = fresh->next_spare;
      --spare_count_;
    } else {
      fresh = static_cast<block*>(std::aligned_alloc(block_size, block_size));
      if (!fresh) throw std::bad_alloc();
    }
    fresh->used = header;
    fresh->released = 0;
    tail_ = fresh;  // the old tail is freed by its last release()
  }

  // Freed blocks kept for reuse. glibc serves a 64 KiB-aligned 64 KiB block
  // with mmap, and frees it with munmap (a TLB shootdown in a threaded
  // process), so a stream that keeps several blocks pending must not give
  // them back one by one: up to max_spares (1 MiB) wait here instead,
  // chained through their headers, so that an arena is three words.
  static constexpr std::size_t max_spares = 16;
  block* spares_ = nullptr;
  std::size_t spare_count_ = 0;
  block* tail_ = nullptr;
};

}  // namespace sluice::detail
