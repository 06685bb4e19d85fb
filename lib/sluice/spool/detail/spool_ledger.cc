#include "sluice/spool/detail/spool_ledger.h"

#include <algorithm>
#include <vector>

#include "sluice/base/detail/syscalls.h"
#include "sluice/spool/detail/spool_segment.h"

namespace sluice::detail {

std::error_code spool_ledger::recover() {
  std::vector<spool_dir::found> found;
  if (std::error_code ec = dir_.list(found)) return ec;
  const spool_position pos = dir_.read_position();
  for (const spool_dir::found& f : found) {
    // Before the saved position: acknowledged whole, its deletion cut short.
    if (pos.seq != 0 && f.seq < pos.seq) {
      (void)sys.unlink(dir_.file(segment_name(f.seq)).c_str());
      continue;
    }
    segment s{.seq = f.seq, .size = f.size, .sealed = true};
    if (f.seq == pos.seq && pos.offset >= segment_header_size && pos.offset <= f.size) s.start = pos.offset;
    disk_bytes_ += f.size;
    segs_.push_back(s);
    next_seq_ = f.seq + 1;
  }
  // A sequence number is never used twice in DIR: a new segment numbered
  // as the saved position's would be read from that old offset, and one
  // numbered below it deleted unsent as acknowledged. The position
  // outlives its segments (see release()), so it is the high mark.
  next_seq_ = std::max(next_seq_, pos.seq + 1);
  recovered_ = segs_.size();
  for (segment& s : segs_) s.recovered = true;
  return {};
}

spool_ledger::segment* spool_ledger::reading() noexcept {
  for (segment& s : segs_)
    if (!s.read_done) return &s;
  return nullptr;
}

bool spool_ledger::settle(std::uint64_t end) noexcept {
  bool earlier = false;
  for (segment& s : segs_) {
    if (s.acked == s.sent) continue;
    ++s.acked;
    s.acked_end = end;
    earlier = s.recovered;
    break;
  }
  return earlier;
}

void spool_ledger::release() {
  while (!segs_.empty() && segs_.front().read_done && segs_.front().acked == segs_.front().sent) {
    const segment& s = segs_.front();
    // The last segment going: the position says it is done, before it is
    // deleted, so that DIR keeps the highest number used (see recover()) and
    // no older position is left to apply to a later run's segment.
    if (segs_.size() == 1) {
      (void)dir_.write_position({s.seq, s.size});
      position_dirty_ = false;
    }
    (void)sys.unlink(dir_.file(segment_name(s.seq)).c_str());
    disk_bytes_ -= s.size;
    segs_.pop_front();
  }
}

void spool_ledger::save_position() {
  if (!position_dirty_) return;
  position_dirty_ = false;
  for (const segment& s : segs_) {
    if (s.acked == 0) continue;
    (void)dir_.write_position({s.seq, s.acked_end});
    break;
  }
}

}  // namespace sluice::detail
