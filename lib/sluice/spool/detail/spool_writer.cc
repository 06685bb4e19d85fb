#include "sluice/spool/detail/spool_writer.h"

#include <fcntl.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <utility>

#include "sluice/base/detail/syscalls.h"
#include "sluice/spool/detail/spool_segment.h"

namespace sluice::detail {

bool spool_writer::begins_segment(std::uint64_t rec) const noexcept {
  return proj_live_ == 0 || (proj_live_ > segment_header_size && proj_live_ + rec > o_.segment_bytes);
}

bool spool_writer::fits(std::size_t payload) const noexcept {
  const std::uint64_t rec = record_header_size + payload;
  const std::uint64_t used = ledger_.disk_bytes() + buf_.size() + proj_headers_;
  return used == 0 || used + rec + (begins_segment(rec) ? segment_header_size : 0) <= o_.max_bytes;
}

void spool_writer::add(std::string_view payload, write_cb cb) {
  const std::uint64_t rec = record_header_size + payload.size();
  if (begins_segment(rec)) {
    proj_headers_ += segment_header_size;
    proj_live_ = segment_header_size;
  }
  proj_live_ += rec;
  append_record(buf_, payload);
  ends_.push_back(buf_.size());
  cbs_.push_back(std::move(cb));
}

std::error_code spool_writer::write(std::vector<write_cb>& written) {
  std::deque<spool_ledger::segment>& segs = ledger_.segments();
  std::size_t done_bytes = 0, done_records = 0;
  while (done_records < ends_.size()) {
    if (fd_ >= 0 && segs.back().size > segment_header_size &&
        segs.back().size + (ends_[done_records] - done_bytes) > o_.segment_bytes)
      seal_live();
    std::string header;
    bool fresh = false;
    if (fd_ < 0) {
      const std::uint64_t seq = ledger_.take_seq();
      const std::string path = dir_.file(segment_name(seq));
      fd_ = sys.open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC | O_APPEND, 0600);
      if (fd_ < 0) return stopped(last_error(), done_bytes, done_records);
      segs.push_back(spool_ledger::segment{.seq = seq});
      append_segment_header(header, seq);
      fresh = true;
    }
    // As many whole records as fit in this segment, one at least.
    const std::uint64_t room = o_.segment_bytes - std::min(o_.segment_bytes, segs.back().size + header.size());
    std::size_t k = done_records + 1;
    while (k < ends_.size() && ends_[k] - done_bytes <= room) ++k;
    const std::size_t piece = ends_[k - 1] - done_bytes;
    if (std::error_code ec = append(header, std::string_view(buf_).substr(done_bytes, piece))) {
      cut_back(fresh);
      return stopped(ec, done_bytes, done_records);
    }
    if (o_.sync == spool_sync::batch && fresh) (void)dir_.sync();
    ledger_.grew(header.size() + piece);
    spooled_records += k - done_records;
    spooled_bytes += piece - (k - done_records) * record_header_size;
    done_bytes += piece;
    done_records = k;
  }
  buf_.clear();
  ends_.clear();
  reset_projection();
  for (write_cb& cb : cbs_) written.push_back(std::move(cb));
  cbs_.clear();
  return {};
}

// One writev of `header` (a new segment's) and `records` to the live
// segment, and its fsync per the policy.
std::error_code spool_writer::append(const std::string& header, std::string_view records) {
  iovec iov[2] = {{const_cast<char*>(header.data()), header.size()},
                  {const_cast<char*>(records.data()), records.size()}};
  const int first = header.empty() ? 1 : 0;
  if (const std::error_code ec = write_fully(fd_, iov + first, 2 - first)) return ec;
  if (o_.sync == spool_sync::batch && sys.fsync(fd_) != 0) return last_error();
  return {};
}

// A write that failed leaves the segment as it was before it: cut back
// (a torn record would be dropped by the reader anyway), closed.
void spool_writer::cut_back(bool fresh) noexcept {
  std::deque<spool_ledger::segment>& segs = ledger_.segments();
  spool_ledger::segment& live = segs.back();
  if (fresh) {
    sys.close(fd_);
    fd_ = -1;
    (void)sys.unlink(dir_.file(segment_name(live.seq)).c_str());
    segs.pop_back();
  } else {
    (void)sys.ftruncate(fd_, static_cast<off_t>(live.size));
    seal_live();
  }
}

std::error_code spool_writer::stopped(std::error_code ec, std::size_t done_bytes, std::size_t done_records) noexcept {
  done_bytes_ = done_bytes;
  done_records_ = done_records;
  return ec;
}

void spool_writer::give_up(std::vector<write_cb>& written, std::deque<memory_record>& unwritten) {
  for (std::size_t i = 0; i < done_records_; ++i) written.push_back(std::move(cbs_[i]));
  std::string_view rest = std::string_view(buf_).substr(done_bytes_);
  for (std::size_t i = done_records_; i < cbs_.size(); ++i) {
    std::string_view payload;
    std::size_t used = 0;
    [[maybe_unused]] const record_status st = parse_record(rest, payload, used);
    unwritten.push_back({std::string(payload), std::move(cbs_[i])});
    rest.remove_prefix(used);
  }
  buf_.clear();
  ends_.clear();
  cbs_.clear();
  done_bytes_ = done_records_ = 0;
  reset_projection();
}

// With the batch written (or given up): the live segment as it is.
void spool_writer::reset_projection() noexcept {
  proj_headers_ = 0;
  proj_live_ = fd_ >= 0 ? ledger_.segments().back().size : 0;
}

void spool_writer::seal_live() noexcept {
  if (fd_ < 0) return;
  sys.close(fd_);
  fd_ = -1;
  ledger_.segments().back().sealed = true;
  if (buf_.empty()) proj_live_ = 0;
}

void spool_writer::close() noexcept {
  if (fd_ >= 0) sys.close(fd_);
  fd_ = -1;
}

}  // namespace sluice::detail
