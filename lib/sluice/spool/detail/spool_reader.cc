#include "sluice/spool/detail/spool_reader.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <string>

#include "sluice/base/detail/syscalls.h"
#include "sluice/spool/detail/spool_segment.h"

namespace sluice::detail {

namespace {

constexpr std::size_t reader_chunk = 256 * 1024;

}  // namespace

spool_reader::status spool_reader::next(const spool_ledger::segment& s, std::string_view& rec, std::uint64_t& rec_end,
                                        std::error_code& ec) {
  if (seq_ != s.seq) {
    close();
    seq_ = s.seq;
    const std::string path = dir_.file(segment_name(s.seq));
    fd_ = sys.open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC, 0);
    char h[segment_header_size];
    if (fd_ < 0 || ::pread(fd_, h, sizeof h, 0) != static_cast<ssize_t>(sizeof h) ||
        !check_segment_header({h, sizeof h}, s.seq)) {
      // Not a segment, or one whose header never reached the disk.
      if (s.sealed) torn += s.size;
      if (!s.sealed) seq_ = 0;
      close_fd();
      return s.sealed ? status::end : status::later;
    }
    pos_ = s.start != 0 ? s.start : segment_header_size;
    if (::lseek(fd_, static_cast<off_t>(pos_), SEEK_SET) < 0) pos_ = segment_header_size;
    buf_.resize(reader_chunk);
    beg_ = end_ = 0;
  }
  if (fd_ < 0) return status::end;
  for (;;) {
    std::string_view payload;
    std::size_t used = 0;
    const record_status st = parse_record({buf_.data() + beg_, end_ - beg_}, payload, used);
    if (st == record_status::ok) {
      beg_ += used;
      pos_ += used;
      rec = payload;
      rec_end = pos_;
      return status::record;
    }
    if (st == record_status::bad) return drop_rest(s);
    // Need more: read on, up to what the live segment holds.
    if (beg_ != 0) {
      std::copy(buf_.begin() + static_cast<std::ptrdiff_t>(beg_), buf_.begin() + static_cast<std::ptrdiff_t>(end_),
                buf_.begin());
      end_ -= beg_;
      beg_ = 0;
    }
    if (end_ >= record_header_size) {
      std::uint32_t len = 0;
      for (int i = 0; i < 4; ++i) len |= std::uint32_t(static_cast<unsigned char>(buf_[i])) << (8 * i);
      // A length is believed only as far as the segment holds bytes: a
      // garbage length (up to max_record_payload, 1 GiB) must not become
      // a buffer of that size before its checksum is looked at.
      if (record_header_size + std::uint64_t{len} > (s.size > pos_ ? s.size - pos_ : 0)) {
        // The live segment may not have it yet only if it is being
        // written, which never leaves a record half in it
        // (spool_writer::write()).
        return drop_rest(s);
      }
      if (buf_.size() < record_header_size + len) buf_.resize(record_header_size + len);
    }
    std::size_t want = buf_.size() - end_;
    const std::uint64_t on_disk = pos_ + end_;
    if (!s.sealed) want = static_cast<std::size_t>(std::min<std::uint64_t>(want, s.size - on_disk));
    ssize_t n = 0;
    if (want != 0) {
      do n = sys.read(fd_, buf_.data() + end_, want);
      while (n < 0 && errno == EINTR);
    }
    if (n < 0) {
      // The segment cannot be read: the caller fails its stream.
      ec = last_error();
      return status::failed;
    }
    if (n == 0) {
      if (!s.sealed) return status::later;
      // A tail that is no whole record: torn by a crash.
      torn += end_;
      return status::end;
    }
    end_ += static_cast<std::size_t>(n);
  }
}

// A record that is not one (a checksum that does not match, a length past
// what the segment holds) ends its segment: the rest is counted as torn and
// never sent.
spool_reader::status spool_reader::drop_rest(const spool_ledger::segment& s) noexcept {
  torn += s.size > pos_ ? s.size - pos_ : end_ - beg_;
  return status::bad;
}

bool spool_reader::unread(const spool_ledger::segment& s) const noexcept {
  if (seq_ != s.seq) return s.size > segment_header_size;
  return pos_ < s.size;
}

void spool_reader::close_fd() noexcept {
  if (fd_ >= 0) sys.close(fd_);
  fd_ = -1;
}

void spool_reader::close() noexcept {
  close_fd();
  seq_ = 0;
  beg_ = end_ = 0;
}

}  // namespace sluice::detail
