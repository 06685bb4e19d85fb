// The syslog writable's sink: frames each batch of messages into one buffer
// and writes it to a net::socket (or the stream that wraps it: TLS); a lost
// connection is replaced after a backoff (reconnecting_socket), and the
// batch in flight is sent again from its first message the kernel had not
// fully taken (over a wrapper, whose bytes are not the messages' bytes: the
// whole batch). It counts the messages written on a connection since its
// last quiet moment, which a connection the receiver breaks turns into
// "maybe lost".
#include "sluice/syslog/syslog_writable.h"

#include <linux/sockios.h>
#include <sys/ioctl.h>

#include <algorithm>
#include <new>
#include <optional>
#include <vector>

#include "sluice/base/errors.h"
#include "sluice/syslog/detail/reconnecting_socket.h"
#include "sluice/net/socket.h"
#include "sluice/sinks/sink.h"

namespace sluice {
namespace detail {

constexpr std::chrono::milliseconds writable_quiet_time = syslog_writable::quiet_time;

namespace {
reconnect_options reconnect_options_of(const syslog_options& o) {
  reconnect_options r;
  r.host = o.host;
  r.port = o.port;
  r.unix_path = o.unix_path;
  r.reconnect_min = o.reconnect_min;
  r.reconnect_max = o.reconnect_max;
  r.give_up_after = o.give_up_after;
  return r;
}
}  // namespace

class syslog_sink final : public sink {
 public:
  // writev and coalesce: a turn's messages go out in one write.
  explicit syslog_sink(const syslog_options& o)
      : sink({.writev = true, .final = true, .coalesce = true}), o_(o), format_(o.header, o.framing), rc_(reconnect_options_of(o), hooks()) {}
  ~syslog_sink() override {
    dying_ = true;
    if (loop_) loop_->cancel(this);
    if (quiet_timer_) loop_->clear_timeout(quiet_timer_);
    rc_.release();
  }

  void attach(loop& l) override {
    if (loop_) return;  // rehomed (its loop went away): nothing more is sent
    loop_ = &l;
    rc_.start(l);
  }

  void write(std::string_view chunk, write_done done) override {
    start_batch(done);
    add(chunk);
    go();
  }
  void writev(const write_batch& batch, write_done done) override {
    start_batch(done);
    buf_->reserve(batch.bytes() + batch.size() * format_.framed_size_max(0));
    for (std::string_view chunk : batch) add(chunk);
    go();
  }

  // Every message is in the kernel: close the connection (FIN) and call
  // back once it is closed.
  void final(final_done done) override {
    ending_ = true;
    rc_.stop();
    broken_before_close();
    duplex* s = rc_.current();
    if (!s || s->destroyed()) {
      done();
      return;
    }
    final_.emplace(done);
    s->end();
  }

  void destroy(std::error_code err, destroy_done done) noexcept override {
    broken_before_close();
    destroyed_ = true;
    rc_.stop();
    final_.reset();
    // The stream counts the batch in flight as dropped: not counted here.
    if (done_ && loop_) loop_->next_tick([this] { complete(make_error_code(errc::destroyed), false); }, this);
    if (rc_.current() && !rc_.current()->destroyed()) rc_.current()->destroy();
    done(err);
  }

  std::size_t sent() const noexcept { return sent_; }
  std::size_t failed() const noexcept { return failed_; }
  std::size_t reconnects() const noexcept { return rc_.reconnects(); }
  bool connected() const noexcept { return connected_; }
  std::size_t maybe_lost() const noexcept { return maybe_lost_; }
  std::size_t connections_lost() const noexcept { return connections_lost_; }
  std::size_t truncated() const noexcept { return truncated_; }

 private:
  void start_batch(write_done done) {
    done_.emplace(done);
    // The last batch's buffer again, once the socket has let go of it: a
    // batch then costs no allocation (and, for large batches, no heap
    // growth and trim around each).
    if (spare_ && spare_.use_count() == 1) {
      buf_ = std::move(spare_);
      buf_->clear();
    } else {
      buf_ = std::make_shared<std::string>();
    }
    ends_.clear();
    first_unsent_ = 0;
    timespec now{};
    ::clock_gettime(CLOCK_REALTIME, &now);
    now_ = now;
  }

  void add(std::string_view msg) {
    if (o_.max_message != 0 && format_.header_size() + msg.size() > o_.max_message) {
      // Cut to fit, never inside a UTF-8 character: a receiver would
      // otherwise refuse the message, or close the connection on it.
      std::size_t cut = o_.max_message > format_.header_size() ? o_.max_message - format_.header_size() : 0;
      while (cut > 0 && (static_cast<unsigned char>(msg[cut]) & 0xC0) == 0x80) --cut;
      msg = msg.substr(0, cut);
      ++truncated_;
    }
    format_.append(*buf_, msg, now_);
    ends_.push_back(buf_->size());
  }

  void go() {
    if (fatal_)
      complete(fatal_);
    else if (connected_)
      send();
    else
      arm_give_up();
  }

  // Writes the batch from its first message not yet taken by the kernel.
  void send() {
    writing_ = true;
    duplex* s = rc_.current();
    net::socket* tcp = rc_.tcp();
    const bool wrapped = static_cast<bool>(o_.wrap);
    const std::size_t from = first_unsent_ == 0 ? 0 : ends_[first_unsent_ - 1];
    base_ = tcp->bytes_written();
    last_write_ = std::chrono::steady_clock::now();
    const std::size_t first = first_unsent_;
    s->write(buf_, std::string_view(*buf_).substr(from), [this, s, tcp, wrapped, from, first](std::error_code ec) {
      if (dying_) return;
      writing_ = false;
      if (destroyed_) return;  // destroy() calls back
      if (!ec) {
        first_unsent_ = ends_.size();
        taken_on(s, first_unsent_ - first);
        complete({});
        return;
      }
      // The messages the kernel took whole count as sent (they are in the
      // loss window); the rest waits for the next connection. A wrapper's
      // records do not map onto the messages: none of the batch counts as
      // taken, and it goes again whole.
      const std::size_t taken = wrapped ? from : from + (tcp->bytes_written() - base_);
      while (first_unsent_ < ends_.size() && ends_[first_unsent_] <= taken) ++first_unsent_;
      taken_on(s, first_unsent_ - first);
      if (first_unsent_ == ends_.size()) {
        complete({});
        return;
      }
      if (fatal_) return complete(fatal_);
      if (connected_) rc_.current()->destroy();  // a write failed: this connection is done
      arm_give_up();
    });
  }

  // `n` messages are in the kernel on `s`: at risk until it is quiet; if
  // `s` is already lost (its 'close' came first), maybe lost at once.
  void taken_on(duplex* s, std::size_t n) {
    if (n == 0) return;
    last_write_ = std::chrono::steady_clock::now();
    if (s != rc_.current() || !connected_) {
      maybe_lost_ += n;
      return;
    }
    at_risk_ += n;
    if (!quiet_timer_) quiet_timer_ = loop_->set_timeout(writable_quiet_time, [this] { check_quiet(); }, this);
  }

  // Nothing written for quiet_time and nothing in the send queue (nor, under
  // a wrapper, in the socket's own buffer): what was written on this
  // connection has reached the receiver's host (TCP) or the receiver (a Unix
  // socket).
  void check_quiet() {
    quiet_timer_ = 0;
    if (!connected_ || at_risk_ == 0) return;
    const auto idle = std::chrono::steady_clock::now() - last_write_;
    std::chrono::milliseconds again = writable_quiet_time / 4;
    if (!writing_ && idle >= writable_quiet_time) {
      int queued = 0;
      if (rc_.tcp()->writable_length() == 0 && ::ioctl(rc_.tcp()->fd(), SIOCOUTQ, &queued) == 0 && queued == 0) {
        at_risk_ = 0;
        return;
      }
    } else if (!writing_) {
      again = std::chrono::ceil<std::chrono::milliseconds>(writable_quiet_time - idle);
    }
    quiet_timer_ = loop_->set_timeout(again, [this] { check_quiet(); }, this);
  }

  // The connection is gone: if the receiver broke it with messages at
  // risk, they may be lost.
  void lost(std::error_code ec) {
    if (quiet_timer_) loop_->clear_timeout(quiet_timer_);
    quiet_timer_ = 0;
    const std::size_t n = std::exchange(at_risk_, 0);
    if (n == 0) return;
    maybe_lost_ += n;
    ++connections_lost_;
    if (o_.on_connection_lost) o_.on_connection_lost(ec, n);
  }

  void complete(std::error_code ec, bool count_failed = true) noexcept {
    if (!done_) return;
    const write_done done = *done_;
    done_.reset();
    if (ec) {
      // For messages the kernel took whole, success stands.
      sent_ += first_unsent_;
      if (count_failed) failed_ += ends_.size() - first_unsent_;
    } else {
      sent_ += ends_.size();
    }
    // Kept for the next batch unless a batch of large messages grew it: an
    // idle writable holds at most this much.
    if (buf_ && buf_->capacity() <= spare_max) spare_ = std::move(buf_);
    buf_.reset();
    done(ec);
    // Touch nothing here: done() may have destroyed the stream and this sink.
  }

  reconnecting_socket::hooks hooks() {
    reconnecting_socket::hooks h;
    h.wrap = o_.wrap;
    h.on_connect = [this](duplex&) { on_connect(); };
    // The receiver sends nothing we need: its bytes are read and dropped,
    // to see its FIN.
    h.on_end = [this](duplex& s) {
      // The receiver closed: it reads no more, so nothing more is written.
      if (!final_ && !s.destroyed()) s.destroy();
    };
    h.on_close = [this](std::error_code ec) { on_close(ec); };
    h.on_give_up = [this](std::error_code ec) {
      if (connected_ || writing_) return;
      complete(ec);
    };
    return h;
  }

  void on_connect() {
    rc_.established();
    connected_ = true;
    if (done_ && !writing_) send();
  }

  // The next attempt is already scheduled (unless end() or destroy()).
  void on_close(std::error_code err) {
    if (dying_) return;
    const bool was_connected = std::exchange(connected_, false);
    // Broken by the receiver: its FIN or a reset before our end(), or a
    // reset during it. Our own end() that closes cleanly, or destroy(),
    // is not a loss.
    if (was_connected && !destroyed_ && (!final_ || err)) lost(err);
    else lost_quietly();
    // Asked during end() too, so that the reason is known (and said) there.
    const bool fatal = err && !destroyed_ && o_.fatal_error && o_.fatal_error(err);
    if (final_) {
      const final_done done = *final_;
      final_.reset();
      done(err);
      return;
    }
    if (destroyed_ || ending_) return;
    if (fatal) return give_up_for_good(err);
    if (done_) arm_give_up();
  }

  // No reconnect would mend `err` (a certificate that does not verify):
  // the batch waiting fails with it, which destroys the stream; without
  // one, the stream is destroyed now. A write in flight ends in send().
  void give_up_for_good(std::error_code err) {
    fatal_ = err;
    rc_.stop();
    if (writing_) return;
    if (done_)
      complete(err);
    else
      report_error(err);
  }

  // A batch waits for a connection: give_up_after bounds the wait.
  void arm_give_up() {
    if (connected_ || !done_ || writing_) return;
    rc_.wait_for_connection();
  }

  // The receiver broke the connection (the socket is destroyed) and its
  // 'close' has not come yet: counted now, before an end() that finds it
  // gone, or the stream's own destroy(), makes it look like ours.
  void broken_before_close() noexcept {
    if (!connected_ || !rc_.current() || !rc_.current()->destroyed() || dying_) return;
    connected_ = false;
    lost(rc_.connection_error());
  }

  void lost_quietly() noexcept {
    at_risk_ = 0;
    if (quiet_timer_) loop_->clear_timeout(quiet_timer_);
    quiet_timer_ = 0;
  }

  syslog_options o_;
  syslog_formatter format_;
  loop* loop_ = nullptr;
  reconnecting_socket rc_;
  // The batch in flight: its frames, where each ends, and the first the
  // kernel has not taken whole.
  std::optional<write_done> done_;
  std::shared_ptr<std::string> buf_;
  std::shared_ptr<std::string> spare_;  // the previous batch's, for reuse
  static constexpr std::size_t spare_max = 256 * 1024;
  std::vector<std::size_t> ends_;
  std::size_t first_unsent_ = 0;
  std::size_t base_ = 0;  // sock_->bytes_written() when its write started
  timespec now_{};
  std::optional<final_done> final_;
  timer_id quiet_timer_ = 0;
  std::chrono::steady_clock::time_point last_write_{};
  std::size_t at_risk_ = 0;  // taken by the kernel on sock_ since its last quiet moment
  std::size_t maybe_lost_ = 0;
  std::size_t connections_lost_ = 0;
  std::size_t truncated_ = 0;
  std::size_t sent_ = 0;
  std::size_t failed_ = 0;
  std::error_code fatal_;  // fatal_error() said so: nothing more is tried
  bool connected_ = false;
  bool writing_ = false;
  bool ending_ = false;
  bool destroyed_ = false;
  bool dying_ = false;
};

namespace {
writable_options stream_options(const syslog_options& o) {
  writable_options w = o.stream;
  w.object_mode = true;
  if (!w.high_water_mark) w.high_water_mark = 1024;
  return w;
}
}  // namespace

}  // namespace detail

syslog_writable::syslog_writable(std::unique_ptr<detail::syslog_sink> s, const syslog_options& options)
    : typed_writable(std::move(s), detail::stream_options(options)) {}

syslog_writable::~syslog_writable() = default;

std::unique_ptr<syslog_writable> make_syslog_writable(const syslog_options& options) {
  if (const char* why = detail::syslog_header_problem(options.header))
    throw stream_error(std::make_error_code(std::errc::invalid_argument), why);
  return std::unique_ptr<syslog_writable>(new syslog_writable(std::make_unique<detail::syslog_sink>(options), options));
}

std::unique_ptr<syslog_writable> make_syslog_writable(const syslog_options& options, std::error_code& ec) noexcept {
  ec.clear();
  if (detail::syslog_header_problem(options.header)) {
    ec = std::make_error_code(std::errc::invalid_argument);
    return nullptr;
  }
  try {
    return std::unique_ptr<syslog_writable>(
        new syslog_writable(std::make_unique<detail::syslog_sink>(options), options));
  } catch (const std::bad_alloc&) {
    ec = std::make_error_code(std::errc::not_enough_memory);
  }
  return nullptr;
}

std::size_t syslog_writable::sent() const noexcept { return get_sink().sent(); }
std::size_t syslog_writable::dropped() const noexcept { return dropped_ + get_sink().failed(); }
std::size_t syslog_writable::reconnects() const noexcept { return get_sink().reconnects(); }
std::size_t syslog_writable::maybe_lost() const noexcept { return get_sink().maybe_lost(); }
std::size_t syslog_writable::connections_lost() const noexcept { return get_sink().connections_lost(); }
std::size_t syslog_writable::truncated() const noexcept { return get_sink().truncated(); }
bool syslog_writable::connected() const noexcept { return get_sink().connected(); }

void syslog_writable::destroy_io(std::error_code err, destroy_done done) noexcept {
  // What the stream still holds will be called back with an error; the
  // batch that gave up is counted by the sink.
  dropped_ += writable_length();
  writable::destroy_io(err, std::move(done));
}

}  // namespace sluice
