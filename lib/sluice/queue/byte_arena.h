// byte_arena: where small chunks are copied when they are written. Pending
// chunks of one stream sit side by side in 64 KiB blocks, so a batch of small
// writes reaches writev() as a few large iovecs instead of one per chunk, and
// a steady stream reuses one warm block instead of allocating.
#pragma once

#include <cstddef>
#include <cstdlib>
#include <new>

namespace sluice::detail {

class byte_arena {
 public:
  static constexpr std::size_t block_size = 64 * 1024;
  /// Chunks up to this size are copied here; larger ones are owned elsewhere.
  static constexpr std::size_t max_chunk = 4096;

  struct block {
    std::size_t used;      // bytes handed out
    std::size_t released;  // bytes given back; the block is free when equal to used
    std::byte data[block_size];
  };

  byte_arena() = default;
  byte_arena(const byte_arena&) = delete;
  byte_arena& operator=(const byte_arena&) = delete;
  ~byte_arena() {
    // Every allocation must have been released: requests outlive no stream.
    if (tail_) std::free(tail_);
    if (spare_) std::free(spare_);
  }

  /// n <= max_chunk bytes, contiguous with the previous allocation when they fit
  /// in the same block. `owner` receives the block to pass to release().
  std::byte* allocate(std::size_t n, block*& owner) {
    if (!tail_ || tail_->used + n > block_size) {
      if (tail_ && tail_->released == tail_->used) {
        tail_->used = tail_->released = 0;  // drained: reuse in place
      } else {
        retire_tail();
      }
    }
    owner = tail_;
    std::byte* p = tail_->data + tail_->used;
    tail_->used += n;
    return p;
  }

  /// Gives back n bytes of `b`. Requests complete in order, but nothing here
  /// depends on it: a block is recycled once all of it has been released.
  void release(block* b, std::size_t n) noexcept {
    b->released += n;
    if (b->released != b->used) return;
    if (b == tail_) {
      b->used = b->released = 0;  // keeps the next chunks at the start of a warm block
    } else if (!spare_) {
      spare_ = b;
    } else {
      std::free(b);
    }
  }

 private:
  // Starts a new tail; the old one is freed by its last release().
  void retire_tail() {
    block* fresh = spare_;
    spare_ = nullptr;
    if (!fresh) {
      fresh = static_cast<block*>(std::malloc(sizeof(block)));
      if (!fresh) throw std::bad_alloc();
    }
    fresh->used = fresh->released = 0;
    if (tail_ && tail_->used == tail_->released) {
      // Unreachable in practice (allocate() reuses a drained tail), kept so a
      // drained block is never leaked.
      std::free(tail_);
    }
    tail_ = fresh;
  }

  block* tail_ = nullptr;
  block* spare_ = nullptr;  // one block kept back, so alternating batches don't malloc
};

}  // namespace sluice::detail
