// spool_reader: the replaying side of a spool_writable: reads the records of
// one segment at a time back from DIR, from a saved position or the start,
// as far as the segment holds whole, intact records.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>
#include <system_error>
#include <vector>

#include "sluice/spool/detail/spool_dir.h"
#include "sluice/spool/detail/spool_ledger.h"

namespace sluice::detail {

class spool_reader {
 public:
  explicit spool_reader(const spool_dir& dir) noexcept : dir_(dir) {}
  ~spool_reader() { close(); }
  spool_reader(const spool_reader&) = delete;
  spool_reader& operator=(const spool_reader&) = delete;

  enum class status {
    record,  // the next record: `rec` (valid until the next call) and `rec_end`, its end in the file
    later,   // the live segment, read to the end of what it holds so far
    end,     // read through for good: a sealed segment's end (a torn tail counted)
    bad,     // a record that is not one: the rest counted as torn, never read (see next())
    failed,  // the segment cannot be read: `ec`
  };
  /// The next record of `s`, the segment read before or a new one (opened,
  /// its header checked, read from `s.start`). After `bad` on the live
  /// segment, the caller seals it: a record appended after the garbage
  /// would never be read.
  status next(const spool_ledger::segment& s, std::string_view& rec, std::uint64_t& rec_end, std::error_code& ec);

  /// Whether the live segment `s` holds records past where the reader is.
  bool unread(const spool_ledger::segment& s) const noexcept;

  /// Forgets the segment: the next call of next() opens its segment anew.
  void close() noexcept;

  /// Bytes dropped at the end of segments: not a whole, intact record.
  std::uint64_t torn = 0;

 private:
  void close_fd() noexcept;
  status drop_rest(const spool_ledger::segment& s) noexcept;

  const spool_dir& dir_;
  std::uint64_t seq_ = 0;  // the segment read (0: none)
  int fd_ = -1;
  std::uint64_t pos_ = 0;  // file offset of buf_[beg_]
  std::vector<char> buf_;
  std::size_t beg_ = 0, end_ = 0;
};

}  // namespace sluice::detail
