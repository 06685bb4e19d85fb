// spool_writer: the appending side of a spool_writable: records batched in
// memory, then written to the live segment with one writev, a new segment
// begun where the live one is full.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

#include "sluice/sinks/sink.h"
#include "sluice/spool/detail/spool_dir.h"
#include "sluice/spool/detail/spool_ledger.h"
#include "sluice/spool/spool_writable.h"

namespace sluice::detail {

class spool_writer {
 public:
  /// A record that the spool could not write, sent from memory.
  struct memory_record {
    std::string data;
    write_cb cb;
  };

  /// `o` is read as it is at each call (the spool clamps its sizes after).
  spool_writer(spool_dir& dir, spool_ledger& ledger, const spool_options& o) noexcept
      : dir_(dir), ledger_(ledger), o_(o) {}
  ~spool_writer() { close(); }
  spool_writer(const spool_writer&) = delete;
  spool_writer& operator=(const spool_writer&) = delete;

  /// Whether max_bytes has room for a record of `payload` bytes besides the
  /// segments, the batch, and the headers of the segments the batch will
  /// begin (as write() cuts it). An empty spool takes any record.
  bool fits(std::size_t payload) const noexcept;
  /// Adds a record to the batch; `cb` is called (by the spool) once it is
  /// written.
  void add(std::string_view payload, write_cb cb);
  bool batch_empty() const noexcept { return buf_.empty(); }
  std::size_t batch_bytes() const noexcept { return buf_.size(); }

  /// Writes the batch to the live segment, begun if need be, cut at record
  /// boundaries where a segment is full; its callbacks are moved to
  /// `written`. On an error, the segment written to is left as it was
  /// before (cut back, closed) and the batch stays, for give_up().
  std::error_code write(std::vector<write_cb>& written);
  /// After write() failed: the callbacks of the records it wrote go to
  /// `written`, the rest of the batch to `unwritten`, in order.
  void give_up(std::vector<write_cb>& written, std::deque<memory_record>& unwritten);

  /// Whether a live segment is open for appending.
  bool live() const noexcept { return fd_ >= 0; }
  /// Closes the live segment: the next batch begins a new one.
  void seal_live() noexcept;
  void close() noexcept;

  /// Records, and their payload bytes, written to segments.
  std::uint64_t spooled_records = 0;
  std::uint64_t spooled_bytes = 0;

 private:
  bool begins_segment(std::uint64_t rec) const noexcept;
  std::error_code append(const std::string& header, std::string_view records);
  void cut_back(bool fresh) noexcept;
  std::error_code stopped(std::error_code ec, std::size_t done_bytes, std::size_t done_records) noexcept;
  void reset_projection() noexcept;

  spool_dir& dir_;
  spool_ledger& ledger_;
  const spool_options& o_;
  // The batch and its callbacks.
  std::string buf_;
  std::vector<write_cb> cbs_;
  std::vector<std::size_t> ends_;  // where each record of buf_ ends
  // What write() will make of the batch: the live segment's size after it,
  // and the headers of the segments it begins.
  std::uint64_t proj_live_ = 0;
  std::uint64_t proj_headers_ = 0;
  // How far a write() that failed got, for give_up().
  std::size_t done_bytes_ = 0;
  std::size_t done_records_ = 0;
  int fd_ = -1;  // the live segment's
};

}  // namespace sluice::detail
