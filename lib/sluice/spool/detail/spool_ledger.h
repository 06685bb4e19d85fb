// spool_ledger: the segments a spool_writable has in its DIR, oldest first,
// and how far the downstream has settled their records: what is deleted, and
// the position saved for the next run.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <system_error>

#include "sluice/spool/detail/spool_dir.h"

namespace sluice::detail {

class spool_ledger {
 public:
  struct segment {
    std::uint64_t seq = 0;
    std::uint64_t size = 0;       // bytes on disk, all whole records (the live one's: written so far)
    std::uint64_t start = 0;      // where reading starts (0: after the header; else a saved position)
    std::uint64_t sent = 0;       // records handed to the downstream
    std::uint64_t acked = 0;      // of those, settled: acknowledged, or refused and dropped
    std::uint64_t acked_end = 0;  // the end of the last settled record
    bool sealed = false;          // no more records will be appended
    bool read_done = false;       // every record read and sent
    bool recovered = false;       // left by an earlier run
  };

  explicit spool_ledger(spool_dir& dir) noexcept : dir_(dir) {}
  spool_ledger(const spool_ledger&) = delete;
  spool_ledger& operator=(const spool_ledger&) = delete;

  /// Takes stock of what an earlier run left in the (open) DIR.
  std::error_code recover();

  std::deque<segment>& segments() noexcept { return segs_; }
  const std::deque<segment>& segments() const noexcept { return segs_; }
  /// The oldest segment not read through, or null.
  segment* reading() noexcept;

  /// A new live segment's number: never one DIR has used (see recover()).
  std::uint64_t take_seq() noexcept { return next_seq_++; }
  /// Bytes written to the live segment (the last one).
  void grew(std::uint64_t n) noexcept {
    segs_.back().size += n;
    disk_bytes_ += n;
  }

  /// One record of the oldest segment with records unsettled is done;
  /// whether an earlier run had spooled it.
  bool settle(std::uint64_t end) noexcept;
  /// The position moved: save_position() will save it.
  void position_moved() noexcept { position_dirty_ = true; }
  /// Deletes the oldest segments whose records are all read and settled.
  void release();
  /// Saves the position, if it moved since it was last saved.
  void save_position();
  /// The position need not be saved (the spool is being emptied).
  void forget_position() noexcept { position_dirty_ = false; }

  std::uint64_t disk_bytes() const noexcept { return disk_bytes_; }
  std::size_t recovered() const noexcept { return recovered_; }

 private:
  spool_dir& dir_;
  std::deque<segment> segs_;
  std::uint64_t next_seq_ = 1;
  std::uint64_t disk_bytes_ = 0;
  std::size_t recovered_ = 0;
  bool position_dirty_ = false;
};

}  // namespace sluice::detail
