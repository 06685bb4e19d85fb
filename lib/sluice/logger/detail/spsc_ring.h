// spsc_ring: one producer thread's ring of a sluice::logger (log_queue, a
// chain of log_buffers), and the record format the logger's print() writes
// into it. Single producer (the thread), single consumer (the logger's
// backend thread). Installed because logger.h's print() writes it inline.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <deque>
#include <string>
#include <vector>

#include "sluice/logger/log_level.h"

namespace sluice::detail {

inline constexpr std::size_t log_cache_line = 64;

struct log_output;

// Formats a record's arguments (see arg_codec.h): made per argument-type
// list at compile time, so that the record names the types by its address.
using log_decode_fn = bool(const std::byte* args, const char* format, std::size_t format_size, log_output& out);

// A record: this header, then the arguments as arg_codec.h stores them.
// Records start at multiples of 8 in the buffer.
struct log_record {
  // Bytes of the record, header included, a multiple of 8. Zero: the rest
  // of the buffer is unused (the next record did not fit); go to its start.
  std::uint32_t size;
  // Lines the thread dropped (a full ring, policy drop) just before this
  // one (at most log_max_told_drops; every drop is counted in the queue).
  std::uint32_t dropped : 31;
  // A SLUICE_LOG_* line below the logger's level at the call, taken for the
  // backtrace (logger::enable_backtrace()).
  std::uint32_t backtrace_only : 1;
  std::uint64_t timestamp;  // ns since the epoch (log_clock::tsc, clock.h: the TSC), or 0
  const char* format;       // a format_string's text: static storage
  std::uint32_t format_size;
  std::uint32_t thread;     // the producer's thread id (gettid)
  log_decode_fn* decode;
  const log_site* site;     // a SLUICE_LOG_* line's call site; null for print()
};
static_assert(sizeof(log_record) == 48);
inline constexpr std::uint32_t log_max_told_drops = (1u << 31) - 1;

inline constexpr std::size_t log_record_align = 8;
constexpr std::size_t log_round(std::size_t n) noexcept { return (n + log_record_align - 1) & ~(log_record_align - 1); }

// A thread's name (set_log_thread_name()), made once per name and kept for
// the process's life: the backend reads it while the thread may take
// another, and writes it only for that thread's lines (a queue outlives its
// thread and is taken over by the next).
struct log_thread_name {
  std::uint32_t thread;  // gettid()
  std::string name;
};

// A ring of bytes. `tail` is the producer's (bytes committed), `head` the
// consumer's (bytes written to the stream and landed: what a crash would
// lose), both counted from the buffer's start, never wrapped. When the
// producer outgrows it (policy grow), it goes on in `next` and never comes
// back.
struct alignas(log_cache_line) log_buffer {
  explicit log_buffer(std::size_t cap, std::uint64_t first) : capacity(cap), mask(cap - 1), base(first) {
    data = static_cast<std::byte*>(::operator new(cap, std::align_val_t{log_cache_line}));
    // Touched now, on the slow path: the first lap round the ring would
    // otherwise take a page fault every 4 KiB, at the caller.
    std::memset(data, 0, cap);
  }
  ~log_buffer() { ::operator delete(data, std::align_val_t{log_cache_line}); }
  log_buffer(const log_buffer&) = delete;
  log_buffer& operator=(const log_buffer&) = delete;

  std::byte* data;
  const std::size_t capacity;  // a power of two
  const std::size_t mask;
  const std::uint64_t base;  // the queue's position at this buffer's byte 0
  std::atomic<log_buffer*> next{nullptr};
  alignas(log_cache_line) std::atomic<std::uint64_t> tail{0};
  alignas(log_cache_line) std::atomic<std::uint64_t> head{0};
};

// One thread's queue: the chain of buffers, the producer's cursor and the
// consumer's. The logger owns it and keeps it until it goes; a thread that
// exits lets go of it (owned = false), and the next new thread takes it over
// (what is left in it is still drained, before that thread's lines).
struct alignas(log_cache_line) log_queue {
  // ---- the producer's (the owning thread's): one cache line, all that
  // print() reads (write_buf's own line holds what the backend reads)
  log_buffer* write_buf = nullptr;
  std::byte* write_data = nullptr;  // write_buf's
  std::size_t write_mask = 0;       // write_buf's
  std::uint64_t write_pos = 0;      // in write_buf
  std::uint64_t limit = 0;          // write_buf's head + capacity, as last seen
  std::uint32_t pending_drops = 0;
  std::uint32_t thread_id = 0;      // the owning thread's gettid(), for its records
  std::atomic<std::uint64_t> dropped{0};  // every line this queue dropped

  // ---- the consumer's (the backend thread's)
  alignas(log_cache_line) log_buffer* read_buf = nullptr;
  std::uint64_t read_pos = 0;  // in read_buf
  // The buffers from the oldest one not yet landed to read_buf; the front
  // is the one whose head a crash reads from (crash_buf).
  std::deque<log_buffer*> unlanded;
  std::atomic<log_buffer*> crash_buf{nullptr};
  std::uint64_t reported_drops = 0;  // the drops the lines read so far told of
  std::uint64_t last_stamp = 0;      // ns: the thread's last line's time as written
  std::uint64_t landed = 0;      // every destination wrote the queue up to here
  std::vector<std::uint64_t> landed_by;  // each destination's, with several
  std::uint64_t flush_stop = 0;  // where the lines of the pending flush() end
  void* owner = nullptr;         // the logger's state, for the write callbacks

  // ---- shared
  // A producer waiting for room (policy block) sleeps on space_epoch,
  // which the backend bumps once the ring is half empty.
  alignas(log_cache_line) std::atomic<bool> waiting{false};
  std::atomic<std::uint32_t> space_epoch{0};
  std::atomic<bool> owned{true};
  std::atomic<const log_thread_name*> thread_name{nullptr};  // the owning thread's, once it has one
  log_queue* next_queue = nullptr;  // the logger's list; set before it is published

  // The producer writes into b from now on.
  void write_into(log_buffer* b) noexcept {
    write_buf = b;
    write_data = b->data;
    write_mask = b->mask;
    write_pos = 0;
    limit = b->capacity;
  }

  // Room for `n` bytes (a multiple of 8) at the producer's cursor, or null.
  std::byte* reserve(std::size_t n) noexcept {
    std::uint64_t pos = write_pos;
    const std::size_t off = pos & write_mask;
    const std::size_t capacity = write_mask + 1;
    const std::size_t waste = off + n > capacity ? capacity - off : 0;
    if (pos + waste + n > limit) [[unlikely]] {
      limit = write_buf->head.load(std::memory_order_acquire) + capacity;
      if (pos + waste + n > limit) return nullptr;
    }
    if (waste) [[unlikely]] {
      reinterpret_cast<log_record*>(write_data + off)->size = 0;
      pos += waste;
      write_pos = pos;
      return write_data;
    }
    return write_data + off;
  }
  // Publishes the `n` bytes reserve() gave.
  void commit(std::size_t n) noexcept {
    write_pos += n;
    write_buf->tail.store(write_pos, std::memory_order_release);
    // The line this thread writes ten lines on: the backend read it a lap
    // ago, so a write would wait for it to come back (Quill does the same).
    __builtin_prefetch(write_data + ((write_pos + 10 * log_cache_line) & write_mask), 1, 3);
  }
};

}  // namespace sluice::detail
