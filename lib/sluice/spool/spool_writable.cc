#include "sluice/spool/spool_writable.h"

#include <fcntl.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <deque>
#include <optional>
#include <string_view>
#include <utility>
#include <vector>

#include "sluice/loop/emitter.h"
#include "sluice/base/errors.h"
#include "sluice/loop/loop.h"
#include "sluice/sinks/sink.h"
#include "sluice/spool/detail/spool_dir.h"
#include "sluice/spool/detail/spool_segment.h"
#include "sluice/base/detail/syscalls.h"

namespace sluice::detail {

namespace {

// How long a spool that could not be written waits before it tries again.
constexpr std::chrono::milliseconds disk_retry{1000};
// How often, at most, the position of the acknowledgements is saved.
constexpr std::chrono::milliseconds position_every{100};
constexpr std::size_t reader_chunk = 256 * 1024;

}  // namespace

// The spool between a writable (the producer's side) and the downstream
// writable: write() appends to a memory batch that one writev() puts in the
// live segment; pump() reads the segments back, oldest first, into the
// downstream; on_ack() counts the downstream's callbacks, in order, and
// deletes each segment whose records are all acknowledged.
class spool_sink final : public sink {
 public:
  spool_sink(std::unique_ptr<writable> downstream, const spool_options& o)
      : sink({.final = true}), o_(o), down_(std::move(downstream)) {
    if (o_.max_bytes < 4 * segment_header_size) o_.max_bytes = 4 * segment_header_size;
    o_.segment_bytes = std::max<std::uint64_t>(std::min(o_.segment_bytes, o_.max_bytes / 4), segment_header_size + 1);
  }

  ~spool_sink() override {
    // The downstream pays what it owes as it goes: our callbacks then only
    // pass the errors on (see on_ack()).
    closing_ = true;
    down_.reset();
    close_reader();
    close_writer();
  }

  // Opens DIR and takes stock of what an earlier run left there.
  std::error_code open() {
    if (!down_) return user_error("spool: no downstream writable");
    if (std::error_code ec = dir_.open(o_.dir)) return ec;
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

  void attach(loop& l) override {
    loop_ = &l;
    if (attached_) return;
    attached_ = true;
    down_->on(event::drain, [this] { on_down_drain(); });
    down_->on(event::error, [this](std::error_code ec) { on_down_error(ec); });
    // What an earlier run left goes first, from the loop.
    if (!segs_.empty()) loop_->set_immediate([this] { pump(); }, this);
  }

  void write(std::string_view chunk, write_done done) override {
    if (!take(chunk, done)) held_.emplace(held{chunk, done});
  }

  void final(final_done done) override {
    final_.emplace(done);
    flush();
    check_final();
  }

  void destroy(std::error_code err, destroy_done done) noexcept override {
    if (destroyed_) {
      done(err);
      return;
    }
    // What is batched is written if it can be: its callbacks then say so.
    if (!wbuf_.empty() && !disk_failed_) flush();
    destroyed_ = true;
    pay_ready();
    fail_memory(err ? err : make_error_code(errc::destroyed));
    save_position();
    if (loop_) {
      loop_->cancel(this);
      if (position_timer_ != 0) loop_->clear_timeout(position_timer_);
      position_timer_ = 0;
    }
    close_reader();
    close_writer();
    if (!down_->destroyed()) down_->destroy(err);
    done(err);
  }

  writable& downstream() noexcept { return *down_; }

  std::uint64_t spooled_records = 0;
  std::uint64_t spooled_bytes = 0;
  std::uint64_t sent = 0;
  std::uint64_t acked = 0;
  std::uint64_t refused = 0;
  std::uint64_t acked_earlier = 0;
  std::uint64_t refused_earlier = 0;
  std::uint64_t torn = 0;
  std::size_t failures = 0;
  std::uint64_t bypassed = 0;
  std::size_t segments() const noexcept { return segs_.size(); }
  std::uint64_t disk_bytes() const noexcept { return disk_bytes_; }
  std::size_t recovered() const noexcept { return recovered_; }

 private:
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
  struct held {
    std::string_view chunk;
    write_done done;
  };
  // A downstream callback for a record sent from the spool, not yet taken
  // as an acknowledgement or a refusal (see on_ack()).
  struct outcome {
    std::uint64_t end;
    std::error_code ec;
  };
  // A record that the spool could not write, sent from memory.
  struct memory_record {
    std::string data;
    write_cb cb;
  };

  // Takes a chunk, or says it must wait (the spool is full, or cannot be
  // written and the downstream has no room).
  bool take(std::string_view chunk, const write_done& done) {
    // Back to the disk only once the records kept in memory are all handed
    // to the downstream: a new record on disk would be sent before them
    // (the reader serves the live segment first, and for good).
    if (disk_failed_ && memory_.empty() && std::chrono::steady_clock::now() >= retry_at_) disk_failed_ = false;
    if (!disk_failed_) {
      // What the disk will hold with this record: the batch, and the
      // headers of the segments it will begin (as flush() cuts it).
      const std::uint64_t rec = record_header_size + chunk.size();
      const bool begins = proj_live_ == 0 || (proj_live_ > segment_header_size && proj_live_ + rec > o_.segment_bytes);
      const std::uint64_t used = disk_bytes_ + wbuf_.size() + proj_headers_;
      if (used != 0 && used + rec + (begins ? segment_header_size : 0) > o_.max_bytes) return false;
      if (chunk.size() > max_record_payload) {
        done(make_error_code(std::errc::message_size));
        return true;
      }
      if (begins) {
        proj_headers_ += segment_header_size;
        proj_live_ = segment_header_size;
      }
      proj_live_ += rec;
      append_record(wbuf_, chunk);
      wends_.push_back(wbuf_.size());
      wcbs_.push_back(done.take_callback());
      done();
      if (wbuf_.size() >= o_.flush_bytes) {
        flush();
      } else if (!flush_queued_) {
        flush_queued_ = true;
        loop_->set_immediate([this] { flush(); }, this);
      }
      return true;
    }
    // The disk failed: straight to the downstream, after everything before.
    if (unsent() || !memory_.empty() || down_->writable_need_drain() || down_->destroyed()) return false;
    write_cb cb = done.take_callback();
    ++bypassed;
    ++memory_in_flight_;
    down_->write(chunk, [this, cb = std::move(cb)](std::error_code ec) mutable { on_memory_ack(ec, cb); });
    done();
    return true;
  }

  // Writes the batch to the live segment, begun if need be, cut at record
  // boundaries where a segment is full; then its callbacks, and the records
  // go out.
  void flush() {
    flush_queued_ = false;
    if (wbuf_.empty() || destroyed_now()) return;
    std::size_t done_bytes = 0, done_records = 0;
    while (done_records < wends_.size()) {
      if (wfd_ >= 0 && segs_.back().size > segment_header_size &&
          segs_.back().size + (wends_[done_records] - done_bytes) > o_.segment_bytes)
        seal_live();
      std::string header;
      bool fresh = false;
      if (wfd_ < 0) {
        const std::uint64_t seq = next_seq_++;
        const std::string path = dir_.file(segment_name(seq));
        wfd_ = sys.open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC | O_APPEND, 0600);
        if (wfd_ < 0) return disk_failed(last_error(), done_bytes, done_records);
        segs_.push_back(segment{.seq = seq});
        append_segment_header(header, seq);
        fresh = true;
      }
      // As many whole records as fit in this segment, one at least.
      const std::uint64_t room = o_.segment_bytes - std::min(o_.segment_bytes, segs_.back().size + header.size());
      std::size_t k = done_records + 1;
      while (k < wends_.size() && wends_[k] - done_bytes <= room) ++k;
      const std::size_t piece = wends_[k - 1] - done_bytes;
      if (std::error_code ec = append(header, std::string_view(wbuf_).substr(done_bytes, piece)))
        return write_failed(ec, fresh, done_bytes, done_records);
      if (o_.sync == spool_sync::batch && fresh) (void)dir_.sync();
      const std::uint64_t n = header.size() + piece;
      segs_.back().size += n;
      disk_bytes_ += n;
      spooled_records += k - done_records;
      spooled_bytes += piece - (k - done_records) * record_header_size;
      done_bytes += piece;
      done_records = k;
    }
    wbuf_.clear();
    wends_.clear();
    reset_projection();
    // The callbacks come from the loop, never inside the write() whose
    // chunk filled the batch.
    if (ready_.empty() && !destroyed_) loop_->next_tick([this] { pay_ready(); }, this);
    for (write_cb& cb : wcbs_) ready_.push_back(std::move(cb));
    wcbs_.clear();
    pump();
  }

  // One writev of `header` (a new segment's) and `records` to the live
  // segment, and its fsync per the policy.
  std::error_code append(const std::string& header, std::string_view records) {
    iovec iov[2] = {{const_cast<char*>(header.data()), header.size()},
                    {const_cast<char*>(records.data()), records.size()}};
    const int first = header.empty() ? 1 : 0;
    if (const std::error_code ec = write_fully(wfd_, iov + first, 2 - first)) return ec;
    if (o_.sync == spool_sync::batch && sys.fsync(wfd_) != 0) return last_error();
    return {};
  }

  // The callbacks of the records written: durable.
  void pay_ready() {
    std::vector<write_cb> cbs;
    cbs.swap(ready_);
    for (write_cb& cb : cbs)
      if (cb) cb({});
  }

  // A write that failed leaves the segment as it was before it: cut back
  // (a torn record would be dropped by the reader anyway), closed.
  void write_failed(std::error_code ec, bool fresh, std::size_t done_bytes, std::size_t done_records) {
    segment& live = segs_.back();
    if (fresh) {
      sys.close(wfd_);
      wfd_ = -1;
      (void)sys.unlink(dir_.file(segment_name(live.seq)).c_str());
      segs_.pop_back();
    } else {
      (void)sys.ftruncate(wfd_, static_cast<off_t>(live.size));
      seal_live();
    }
    disk_failed(ec, done_bytes, done_records);
  }

  // The spool cannot be written: said once; the batch goes out from memory,
  // after what the disk holds.
  void disk_failed(std::error_code ec, std::size_t done_bytes, std::size_t done_records) {
    ++failures;
    disk_failed_ = true;
    retry_at_ = std::chrono::steady_clock::now() + disk_retry;
    if (!said_failure_) {
      said_failure_ = true;
      if (o_.on_spool_error) o_.on_spool_error(ec);
    }
    // The records written before the failure are in the spool.
    for (std::size_t i = 0; i < done_records; ++i) ready_.push_back(std::move(wcbs_[i]));
    if (done_records != 0 && !destroyed_) loop_->next_tick([this] { pay_ready(); }, this);
    std::string_view rest = std::string_view(wbuf_).substr(done_bytes);
    for (std::size_t i = done_records; i < wcbs_.size(); ++i) {
      write_cb& cb = wcbs_[i];
      std::string_view payload;
      std::size_t used = 0;
      [[maybe_unused]] const record_status st = parse_record(rest, payload, used);
      memory_.push_back({std::string(payload), std::move(cb)});
      rest.remove_prefix(used);
    }
    wbuf_.clear();
    wends_.clear();
    wcbs_.clear();
    reset_projection();
    pump();
  }

  // With the batch written (or given up): the live segment as it is.
  void reset_projection() noexcept {
    proj_headers_ = 0;
    proj_live_ = wfd_ >= 0 ? segs_.back().size : 0;
  }

  // Closes the live segment: the next batch begins a new one.
  void seal_live() {
    if (wfd_ < 0) return;
    sys.close(wfd_);
    wfd_ = -1;
    segs_.back().sealed = true;
    if (wbuf_.empty()) proj_live_ = 0;
  }

  // Whether records wait on disk, or in the batch, to be sent.
  bool unsent() const noexcept {
    if (!wbuf_.empty()) return true;
    for (const segment& s : segs_) {
      if (s.read_done) continue;
      if (s.sealed) return true;
      // The live segment: unsent past where the reader is.
      if (rseq_ != s.seq) return s.size > segment_header_size;
      return rpos_ < s.size;
    }
    return false;
  }

  segment* reading() noexcept {
    for (segment& s : segs_)
      if (!s.read_done) return &s;
    return nullptr;
  }

  // Reads records back and hands them to the downstream while it has room:
  // the disk's first, in order, then those the disk could not take.
  void pump() {
    if (pumping_ || destroyed_now()) return;
    pumping_ = true;
    while (!down_->writable_need_drain() && !down_->destroyed() && !down_->writable_ended()) {
      segment* s = reading();
      if (!s) {
        if (memory_.empty()) break;
        memory_record r = std::move(memory_.front());
        memory_.pop_front();
        ++bypassed;
        ++memory_in_flight_;
        down_->write(r.data, [this, cb = std::move(r.cb)](std::error_code ec) mutable { on_memory_ack(ec, cb); });
        continue;
      }
      std::string_view rec;
      std::uint64_t end = 0;
      if (next_record(*s, rec, end)) {
        ++s->sent;
        ++sent;
        down_->write(rec, [this, end](std::error_code ec) { on_ack(ec, end); });
        continue;
      }
      if (!reader_at_end_) break;  // the live segment, read to its end so far
      s->read_done = true;
      close_reader();
      release();
    }
    pumping_ = false;
    retry_held();
    check_final();
  }

  // The next record of `s`, or false at the end of what it holds now
  // (reader_at_end_ says whether for good: a sealed segment read through).
  bool next_record(segment& s, std::string_view& rec, std::uint64_t& end) {
    reader_at_end_ = false;
    if (rseq_ != s.seq) {
      close_reader();
      rseq_ = s.seq;
      const std::string path = dir_.file(segment_name(s.seq));
      rfd_ = sys.open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC, 0);
      char h[segment_header_size];
      if (rfd_ < 0 || ::pread(rfd_, h, sizeof h, 0) != static_cast<ssize_t>(sizeof h) ||
          !check_segment_header({h, sizeof h}, s.seq)) {
        // Not a segment, or one whose header never reached the disk.
        if (s.sealed) torn += s.size;
        reader_at_end_ = s.sealed;
        if (!s.sealed) rseq_ = 0;
        close_reader_fd();
        return false;
      }
      rpos_ = s.start != 0 ? s.start : segment_header_size;
      if (::lseek(rfd_, static_cast<off_t>(rpos_), SEEK_SET) < 0) rpos_ = segment_header_size;
      rbuf_.resize(reader_chunk);
      rbeg_ = rend_ = 0;
    }
    if (rfd_ < 0) {
      reader_at_end_ = true;
      return false;
    }
    for (;;) {
      std::string_view payload;
      std::size_t used = 0;
      const record_status st = parse_record({rbuf_.data() + rbeg_, rend_ - rbeg_}, payload, used);
      if (st == record_status::ok) {
        rbeg_ += used;
        rpos_ += used;
        rec = payload;
        end = rpos_;
        return true;
      }
      if (st == record_status::bad) return drop_rest(s);
      // Need more: read on, up to what the live segment holds.
      if (rbeg_ != 0) {
        std::copy(rbuf_.begin() + static_cast<std::ptrdiff_t>(rbeg_), rbuf_.begin() + static_cast<std::ptrdiff_t>(rend_),
                  rbuf_.begin());
        rend_ -= rbeg_;
        rbeg_ = 0;
      }
      if (rend_ >= record_header_size) {
        std::uint32_t len = 0;
        for (int i = 0; i < 4; ++i) len |= std::uint32_t(static_cast<unsigned char>(rbuf_[i])) << (8 * i);
        // A length is believed only as far as the segment holds bytes: a
        // garbage length (up to max_record_payload, 1 GiB) must not become
        // a buffer of that size before its checksum is looked at.
        if (record_header_size + std::uint64_t{len} > (s.size > rpos_ ? s.size - rpos_ : 0)) {
          // The live segment may not have it yet only if it is being
          // written, which never leaves a record half in it (flush()).
          return drop_rest(s);
        }
        if (rbuf_.size() < record_header_size + len) rbuf_.resize(record_header_size + len);
      }
      std::size_t want = rbuf_.size() - rend_;
      const std::uint64_t on_disk = rpos_ + rend_;
      if (!s.sealed) want = static_cast<std::size_t>(std::min<std::uint64_t>(want, s.size - on_disk));
      ssize_t n = 0;
      if (want != 0) {
        do n = sys.read(rfd_, rbuf_.data() + rend_, want);
        while (n < 0 && errno == EINTR);
      }
      if (n < 0) {
        // The segment cannot be read: the stream fails, the segment stays.
        report_error(last_error());
        return false;
      }
      if (n == 0) {
        if (s.sealed) {
          // A tail that is no whole record: torn by a crash.
          torn += rend_;
          reader_at_end_ = true;
        }
        return false;
      }
      rend_ += static_cast<std::size_t>(n);
    }
  }

  // A record that is not one (a checksum that does not match, a length
  // past what the segment holds) ends its segment: the rest is counted as
  // torn and never sent. (The live segment, garbled under our feet, is
  // closed: a record appended after the garbage would never be read.)
  bool drop_rest(segment& s) {
    if (!s.sealed) seal_live();
    torn += s.size > rpos_ ? s.size - rpos_ : rend_ - rbeg_;
    reader_at_end_ = true;
    return false;
  }

  // The downstream's callback for a record sent from the spool. They come in
  // the order of the writes: the oldest segment with records unacknowledged
  // is this one's.
  void on_ack(std::error_code ec, std::uint64_t end) {
    if (closing_ || destroyed_) return;
    if (ec || !undecided_.empty()) {
      // A failed write is either the downstream failing (the record then
      // stays in the spool for the next run) or a refusal it goes on after
      // (a RELP receiver's rsp 500: sent again, it would be refused again,
      // and hold up everything behind it for good). Which one shows once
      // the downstream's on_write is over, after this callback (Node's
      // onwriteError calls back, then destroys): until then this outcome,
      // and those after it, wait in order.
      undecided_.push_back({end, ec});
      if (!deciding_) {
        deciding_ = true;
        loop_->next_tick([this] { decide(); }, this);
      }
      return;
    }
    settle(end, {});
  }

  void decide() {
    deciding_ = false;
    std::deque<outcome> q;
    q.swap(undecided_);
    if (destroyed_now()) return;
    if (down_->destroyed() || down_->errored()) {
      for (const outcome& o : q)
        if (o.ec) return on_down_error(o.ec);
    }
    for (const outcome& o : q) {
      if (o.ec && o_.is_refusal && !o_.is_refusal(o.ec)) return on_down_error(o.ec);
      settle(o.end, o.ec);
      if (destroyed_now()) return;
    }
  }

  // One record of the oldest segment with records unsettled is done:
  // acknowledged, or (`ec`) refused and dropped from the spool.
  void settle(std::uint64_t end, std::error_code ec) {
    bool earlier = false;
    for (segment& s : segs_) {
      if (s.acked == s.sent) continue;
      ++s.acked;
      s.acked_end = end;
      earlier = s.recovered;
      break;
    }
    if (ec) {
      ++refused;
      refused_earlier += earlier;
      if (o_.on_refused) o_.on_refused(ec);
      if (destroyed_now()) return;
    } else {
      ++acked;
      acked_earlier += earlier;
    }
    position_dirty_ = true;
    if (position_timer_ == 0 && !destroyed_)
      position_timer_ = loop_->set_timeout(position_every, [this] {
        position_timer_ = 0;
        save_position();
      }, this);
    release();
    retry_held();
    check_final();
  }

  void on_memory_ack(std::error_code ec, write_cb& cb) {
    if (!closing_) --memory_in_flight_;
    if (cb) cb(ec);
    if (closing_) return;
    retry_held();
    check_final();
  }

  // Deletes the oldest segments whose records are all read and acknowledged.
  void release() {
    while (!segs_.empty() && segs_.front().read_done && segs_.front().acked == segs_.front().sent) {
      const segment& s = segs_.front();
      // The last segment going: the position says it is done, before it is
      // deleted, so that DIR keeps the highest number used (see open()) and
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

  void save_position() {
    if (!position_dirty_) return;
    position_dirty_ = false;
    for (const segment& s : segs_) {
      if (s.acked == 0) continue;
      (void)dir_.write_position({s.seq, s.acked_end});
      break;
    }
  }

  // A chunk held back gets another try: the spool made room, the disk can be
  // tried again, or the downstream drained.
  void retry_held() {
    if (!held_ || destroyed_now()) return;
    // A full spool whose only segment is live and wholly acknowledged makes
    // room by closing it, so that it can go.
    if (!disk_failed_ && wfd_ >= 0 && segs_.size() == 1 && wbuf_.empty() && !unsent() &&
        segs_.back().acked == segs_.back().sent) {
      seal_live();
      segs_.back().read_done = true;
      close_reader();
      release();
    }
    held h = *held_;
    held_.reset();
    if (!take(h.chunk, h.done)) held_.emplace(h);
  }

  void on_down_drain() {
    if (closing_) return;
    pump();
  }

  void on_down_error(std::error_code ec) {
    if (closing_ || destroyed_) return;
    if (final_) {
      const final_done f = *final_;
      final_.reset();
      return f(ec);
    }
    report_error(ec);
  }

  // end(): once everything is acknowledged, the spool is emptied and the
  // downstream ended.
  void check_final() {
    if (!final_ || ending_ || destroyed_now()) return;
    if (held_ || unsent() || !memory_.empty() || memory_in_flight_ != 0 || !undecided_.empty() || acked + refused != sent)
      return;
    ending_ = true;
    seal_live();
    for (segment& s : segs_) s.read_done = true;
    close_reader();
    for (segment& s : segs_) s.acked = s.sent;  // all of them: acked == sent
    release();
    position_dirty_ = false;
    if (position_timer_ != 0) loop_->clear_timeout(position_timer_);
    position_timer_ = 0;
    down_->end([this](std::error_code ec) {
      if (closing_ || !final_) return;
      const final_done f = *final_;
      final_.reset();
      f(ec);
    });
  }

  void fail_memory(std::error_code ec) {
    std::deque<memory_record> q;
    q.swap(memory_);
    for (memory_record& r : q)
      if (r.cb) r.cb(ec);
  }

  bool destroyed_now() const noexcept { return destroyed_ || closing_; }

  void close_reader_fd() {
    if (rfd_ >= 0) sys.close(rfd_);
    rfd_ = -1;
  }
  void close_reader() {
    close_reader_fd();
    rseq_ = 0;
    rbeg_ = rend_ = 0;
  }
  void close_writer() {
    if (wfd_ >= 0) sys.close(wfd_);
    wfd_ = -1;
  }

  spool_options o_;
  std::unique_ptr<writable> down_;
  spool_dir dir_;
  loop* loop_ = nullptr;
  std::deque<segment> segs_;
  std::uint64_t next_seq_ = 1;
  std::uint64_t disk_bytes_ = 0;
  std::size_t recovered_ = 0;
  // The writer: the batch and its callbacks, the live segment's fd.
  std::string wbuf_;
  std::vector<write_cb> wcbs_;
  std::vector<std::size_t> wends_;  // where each record of wbuf_ ends
  std::vector<write_cb> ready_;
  // What flush() will make of the batch: the live segment's size after it,
  // and the headers of the segments it begins.
  std::uint64_t proj_live_ = 0;
  std::uint64_t proj_headers_ = 0;  // written, their callbacks on the next tick
  int wfd_ = -1;
  // The reader: the segment it reads (rseq_), its fd, and its buffer.
  std::uint64_t rseq_ = 0;
  int rfd_ = -1;
  std::uint64_t rpos_ = 0;  // file offset of rbuf_[rbeg_]
  std::vector<char> rbuf_;
  std::size_t rbeg_ = 0, rend_ = 0;
  bool reader_at_end_ = false;
  // Without the disk.
  std::deque<memory_record> memory_;
  std::size_t memory_in_flight_ = 0;
  std::optional<held> held_;
  std::deque<outcome> undecided_;
  std::optional<final_done> final_;
  std::chrono::steady_clock::time_point retry_at_{};
  timer_id position_timer_ = 0;
  bool disk_failed_ = false;
  bool said_failure_ = false;
  bool flush_queued_ = false;
  bool pumping_ = false;
  bool deciding_ = false;
  bool position_dirty_ = false;
  bool ending_ = false;
  bool attached_ = false;
  bool destroyed_ = false;
  bool closing_ = false;
};

namespace {

writable_options stream_options(const spool_options& o) {
  writable_options w = o.stream;
  w.object_mode = true;
  if (!w.high_water_mark) w.high_water_mark = 1024;
  return w;
}

}  // namespace

}  // namespace sluice::detail

namespace sluice {

spool_writable::spool_writable(std::unique_ptr<detail::spool_sink> s, const spool_options& options)
    : typed_writable(std::move(s), detail::stream_options(options)) {}

spool_writable::~spool_writable() = default;

std::unique_ptr<spool_writable> make_spool_writable(std::unique_ptr<writable> downstream,
                                                    const spool_options& options, std::error_code& ec) noexcept {
  ec.clear();
  try {
    auto s = std::make_unique<detail::spool_sink>(std::move(downstream), options);
    ec = s->open();
    if (ec) return nullptr;
    return std::unique_ptr<spool_writable>(new spool_writable(std::move(s), options));
  } catch (const std::bad_alloc&) {
    ec = std::make_error_code(std::errc::not_enough_memory);
  }
  return nullptr;
}

std::unique_ptr<spool_writable> make_spool_writable(std::unique_ptr<writable> downstream,
                                                    const spool_options& options) {
  std::error_code ec;
  auto w = make_spool_writable(std::move(downstream), options, ec);
  if (!w) throw stream_error(ec, options.dir);
  return w;
}

writable& spool_writable::downstream() noexcept { return get_sink().downstream(); }
std::uint64_t spool_writable::spooled_records() const noexcept { return get_sink().spooled_records; }
std::uint64_t spool_writable::spooled_bytes() const noexcept { return get_sink().spooled_bytes; }
std::uint64_t spool_writable::sent_from_spool() const noexcept { return get_sink().sent; }
std::uint64_t spool_writable::acked() const noexcept { return get_sink().acked; }
std::uint64_t spool_writable::refused() const noexcept { return get_sink().refused; }
std::uint64_t spool_writable::acked_earlier() const noexcept { return get_sink().acked_earlier; }
std::uint64_t spool_writable::refused_earlier() const noexcept { return get_sink().refused_earlier; }
std::size_t spool_writable::segments() const noexcept { return get_sink().segments(); }
std::uint64_t spool_writable::disk_bytes() const noexcept { return get_sink().disk_bytes(); }
std::size_t spool_writable::recovered_segments() const noexcept { return get_sink().recovered(); }
std::uint64_t spool_writable::torn_bytes() const noexcept { return get_sink().torn; }
std::size_t spool_writable::spool_failures() const noexcept { return get_sink().failures; }
std::uint64_t spool_writable::bypassed() const noexcept { return get_sink().bypassed; }

}  // namespace sluice
