#include "sluice/spool/spool_writable.h"

#include <algorithm>
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
#include "sluice/spool/detail/spool_ledger.h"
#include "sluice/spool/detail/spool_reader.h"
#include "sluice/spool/detail/spool_segment.h"
#include "sluice/spool/detail/spool_writer.h"

namespace sluice::detail {

namespace {

// How long a spool that could not be written waits before it tries again.
constexpr std::chrono::milliseconds disk_retry{1000};
// How often, at most, the position of the acknowledgements is saved.
constexpr std::chrono::milliseconds position_every{100};

}  // namespace

// The spool between a writable (the producer's side) and the downstream
// writable: write() appends to the writer's batch, which one writev() puts
// in the live segment; pump() has the reader read the segments back, oldest
// first, into the downstream; on_ack() counts the downstream's callbacks, in
// order, and the ledger deletes each segment whose records are all
// acknowledged. Here: the order of those, and the spool's fallback to memory
// while the disk cannot be written.
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
    reader_.close();
    writer_.close();
  }

  // Opens DIR and takes stock of what an earlier run left there.
  std::error_code open() {
    if (!down_) return user_error("spool: no downstream writable");
    if (std::error_code ec = dir_.open(o_.dir)) return ec;
    return ledger_.recover();
  }

  void attach(loop& l) override {
    loop_ = &l;
    if (attached_) return;
    attached_ = true;
    down_->on(event::drain, [this] { on_down_drain(); });
    down_->on(event::error, [this](std::error_code ec) { on_down_error(ec); });
    // What an earlier run left goes first, from the loop.
    if (!ledger_.segments().empty()) loop_->set_immediate([this] { pump(); }, this);
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
    if (!writer_.batch_empty() && !disk_failed_) flush();
    destroyed_ = true;
    pay_ready();
    fail_memory(err ? err : make_error_code(errc::destroyed));
    ledger_.save_position();
    if (loop_) {
      loop_->cancel(this);
      if (position_timer_ != 0) loop_->clear_timeout(position_timer_);
      position_timer_ = 0;
    }
    reader_.close();
    writer_.close();
    if (!down_->destroyed()) down_->destroy(err);
    done(err);
  }

  writable& downstream() noexcept { return *down_; }

  std::uint64_t sent = 0;
  std::uint64_t acked = 0;
  std::uint64_t refused = 0;
  std::uint64_t acked_earlier = 0;
  std::uint64_t refused_earlier = 0;
  std::size_t failures = 0;
  std::uint64_t bypassed = 0;
  std::uint64_t spooled_records() const noexcept { return writer_.spooled_records; }
  std::uint64_t spooled_bytes() const noexcept { return writer_.spooled_bytes; }
  std::uint64_t torn() const noexcept { return reader_.torn; }
  std::size_t segments() const noexcept { return ledger_.segments().size(); }
  std::uint64_t disk_bytes() const noexcept { return ledger_.disk_bytes(); }
  std::size_t recovered() const noexcept { return ledger_.recovered(); }

 private:
  using segment = spool_ledger::segment;
  using memory_record = spool_writer::memory_record;
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

  // Takes a chunk, or says it must wait (the spool is full, or cannot be
  // written and the downstream has no room).
  bool take(std::string_view chunk, const write_done& done) {
    // Back to the disk only once the records kept in memory are all handed
    // to the downstream: a new record on disk would be sent before them
    // (the reader serves the live segment first, and for good).
    if (disk_failed_ && memory_.empty() && std::chrono::steady_clock::now() >= retry_at_) disk_failed_ = false;
    if (!disk_failed_) {
      if (!writer_.fits(chunk.size())) return false;
      if (chunk.size() > max_record_payload) {
        done(make_error_code(std::errc::message_size));
        return true;
      }
      writer_.add(chunk, done.take_callback());
      done();
      if (writer_.batch_bytes() >= o_.flush_bytes) {
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

  // Writes the batch; then its callbacks, and the records go out.
  void flush() {
    flush_queued_ = false;
    if (writer_.batch_empty() || destroyed_now()) return;
    const bool none_ready = ready_.empty();
    if (std::error_code ec = writer_.write(ready_)) return disk_failed(ec);
    // The callbacks come from the loop, never inside the write() whose
    // chunk filled the batch.
    if (none_ready && !destroyed_) loop_->next_tick([this] { pay_ready(); }, this);
    pump();
  }

  // The callbacks of the records written: durable.
  void pay_ready() {
    std::vector<write_cb> cbs;
    cbs.swap(ready_);
    for (write_cb& cb : cbs)
      if (cb) cb({});
  }

  // The spool cannot be written: said once; the batch goes out from memory,
  // after what the disk holds.
  void disk_failed(std::error_code ec) {
    ++failures;
    disk_failed_ = true;
    retry_at_ = std::chrono::steady_clock::now() + disk_retry;
    if (!said_failure_) {
      said_failure_ = true;
      if (o_.on_spool_error) o_.on_spool_error(ec);
    }
    // The records written before the failure are in the spool.
    const std::size_t paid = ready_.size();
    writer_.give_up(ready_, memory_);
    if (ready_.size() != paid && !destroyed_) loop_->next_tick([this] { pay_ready(); }, this);
    pump();
  }

  // Whether records wait on disk, or in the batch, to be sent.
  bool unsent() const noexcept {
    if (!writer_.batch_empty()) return true;
    for (const segment& s : ledger_.segments()) {
      if (s.read_done) continue;
      if (s.sealed) return true;
      // The live segment: unsent past where the reader is.
      return reader_.unread(s);
    }
    return false;
  }

  // Reads records back and hands them to the downstream while it has room:
  // the disk's first, in order, then those the disk could not take.
  void pump() {
    if (pumping_ || destroyed_now()) return;
    pumping_ = true;
    while (!down_->writable_need_drain() && !down_->destroyed() && !down_->writable_ended()) {
      segment* s = ledger_.reading();
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
      std::error_code read_ec;
      const spool_reader::status st = reader_.next(*s, rec, end, read_ec);
      if (st == spool_reader::status::record) {
        ++s->sent;
        ++sent;
        down_->write(rec, [this, end](std::error_code ec) { on_ack(ec, end); });
        continue;
      }
      // The segment cannot be read: the stream fails, the segment stays.
      if (st == spool_reader::status::failed) report_error(read_ec);
      // That, or the live segment read to its end so far: nothing more now.
      if (st == spool_reader::status::failed || st == spool_reader::status::later) break;
      // The live segment, garbled under our feet, is closed: a record
      // appended after the garbage would never be read.
      if (st == spool_reader::status::bad && !s->sealed) writer_.seal_live();
      s->read_done = true;
      reader_.close();
      ledger_.release();
    }
    pumping_ = false;
    retry_held();
    check_final();
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
    const bool earlier = ledger_.settle(end);
    if (ec) {
      ++refused;
      refused_earlier += earlier;
      if (o_.on_refused) o_.on_refused(ec);
      if (destroyed_now()) return;
    } else {
      ++acked;
      acked_earlier += earlier;
    }
    ledger_.position_moved();
    if (position_timer_ == 0 && !destroyed_)
      position_timer_ = loop_->set_timeout(position_every, [this] {
        position_timer_ = 0;
        ledger_.save_position();
      }, this);
    ledger_.release();
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

  // A chunk held back gets another try: the spool made room, the disk can be
  // tried again, or the downstream drained.
  void retry_held() {
    if (!held_ || destroyed_now()) return;
    // A full spool whose only segment is live and wholly acknowledged makes
    // room by closing it, so that it can go.
    std::deque<segment>& segs = ledger_.segments();
    if (!disk_failed_ && writer_.live() && segs.size() == 1 && writer_.batch_empty() && !unsent() &&
        segs.back().acked == segs.back().sent) {
      writer_.seal_live();
      segs.back().read_done = true;
      reader_.close();
      ledger_.release();
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
    writer_.seal_live();
    std::deque<segment>& segs = ledger_.segments();
    for (segment& s : segs) s.read_done = true;
    reader_.close();
    for (segment& s : segs) s.acked = s.sent;  // all of them: acked == sent
    ledger_.release();
    ledger_.forget_position();
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

  spool_options o_;
  std::unique_ptr<writable> down_;
  spool_dir dir_;
  spool_ledger ledger_{dir_};
  spool_writer writer_{dir_, ledger_, o_};
  spool_reader reader_{dir_};
  loop* loop_ = nullptr;
  std::vector<write_cb> ready_;  // written, their callbacks on the next tick
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
std::uint64_t spool_writable::spooled_records() const noexcept { return get_sink().spooled_records(); }
std::uint64_t spool_writable::spooled_bytes() const noexcept { return get_sink().spooled_bytes(); }
std::uint64_t spool_writable::sent_from_spool() const noexcept { return get_sink().sent; }
std::uint64_t spool_writable::acked() const noexcept { return get_sink().acked; }
std::uint64_t spool_writable::refused() const noexcept { return get_sink().refused; }
std::uint64_t spool_writable::acked_earlier() const noexcept { return get_sink().acked_earlier; }
std::uint64_t spool_writable::refused_earlier() const noexcept { return get_sink().refused_earlier; }
std::size_t spool_writable::segments() const noexcept { return get_sink().segments(); }
std::uint64_t spool_writable::disk_bytes() const noexcept { return get_sink().disk_bytes(); }
std::size_t spool_writable::recovered_segments() const noexcept { return get_sink().recovered(); }
std::uint64_t spool_writable::torn_bytes() const noexcept { return get_sink().torn(); }
std::size_t spool_writable::spool_failures() const noexcept { return get_sink().failures; }
std::uint64_t spool_writable::bypassed() const noexcept { return get_sink().bypassed; }

}  // namespace sluice
