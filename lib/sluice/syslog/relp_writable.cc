// The RELP writable's sink: a batch of messages from the stream is framed as
// `syslog` transactions, at most `window` unanswered at a time, and the
// batch completes when every one is answered. A lost session is replaced
// after a backoff, and its unanswered transactions are sent again, in order,
// on the next one (txnrs start again at 1 on each session, as librelp's
// receiver expects).
#include "sluice/syslog/relp_writable.h"

#include <algorithm>
#include <deque>
#include <limits>
#include <vector>

#include "sluice/errors.h"
#include "sluice/net/socket.h"
#include "sluice/sinks/sink.h"
#include "sluice/syslog/relp_frames.h"

namespace sluice {
namespace detail {

namespace {
constexpr std::size_t none = std::numeric_limits<std::size_t>::max();
constexpr std::uint32_t max_txnr = 999'999'999;
// How long end() waits for the answer to `close` (every message is
// answered by then: nothing is at stake but the connection).
constexpr std::chrono::milliseconds close_wait{5000};

std::string cut_text(std::string_view s) {
  std::string t(s.substr(0, 80));
  for (char& c : t)
    if (c < 32 || c > 126) c = ' ';
  return t;
}
}  // namespace

class relp_sink final : public sink {
 public:
  explicit relp_sink(const relp_options& o) : o_(o), format_(o.header, syslog_framing::octet_counting), backoff_(o.reconnect_min) {
    if (o_.window == 0) o_.window = 1;
  }
  ~relp_sink() override {
    dying_ = true;
    if (loop_) loop_->cancel(this);
    cancel_timers();
    if (loop_ && close_timer_) loop_->clear_timeout(close_timer_);
    sock_.reset();
    old_.reset();
  }

  void attach(loop& l) override {
    if (loop_) return;
    loop_ = &l;
    connect_now();
  }

  void write(std::string_view chunk, write_done done) override {
    start_batch(done);
    add(chunk);
    pump();
  }
  void writev(const write_batch& batch, write_done done) override {
    start_batch(done);
    for (std::string_view chunk : batch) add(chunk);
    pump();
  }
  bool has_writev() const noexcept override { return true; }
  bool coalesce_writes() const noexcept override { return true; }

  // Every message is answered: close the session (`close`, its answer),
  // then the connection.
  void final(final_done done) override {
    ending_ = true;
    cancel_timers();
    if (!open_ || !sock_ || sock_->destroyed()) {
      if (sock_ && !sock_->destroyed()) sock_->destroy();
      done();
      return;
    }
    final_.emplace(done);
    close_txnr_ = next_txnr();
    std::string out;
    append_relp_frame(out, close_txnr_, "close", {});
    sock_->write(std::move(out));
    close_timer_ = loop_->set_timeout(close_wait, [this] {
      close_timer_ = 0;
      if (sock_ && !sock_->destroyed()) sock_->destroy();
    }, this);
  }
  bool has_final() const noexcept override { return true; }

  std::error_code destroy(std::error_code err) noexcept override {
    destroyed_ = true;
    cancel_timers();
    final_.reset();
    // The stream counts the batch in flight as dropped: not counted here.
    if (done_ && loop_) loop_->next_tick([this] { complete(make_error_code(errc::destroyed), 0, false); }, this);
    if (sock_ && !sock_->destroyed()) sock_->destroy();
    return err;
  }

  std::size_t acked() const noexcept { return acked_; }
  std::size_t resent() const noexcept { return resent_; }
  std::size_t in_flight() const noexcept { return pending_.size(); }
  std::size_t failed() const noexcept { return failed_; }
  std::size_t refused() const noexcept { return refused_; }
  std::size_t reconnects() const noexcept { return reconnects_; }
  std::size_t truncated() const noexcept { return truncated_; }
  bool connected() const noexcept { return open_; }

 private:
  struct txn {
    std::uint32_t txnr;
    std::size_t index;  // in msgs_
  };

  void start_batch(write_done done) {
    done_.emplace(done);
    msgs_.clear();
    answered_.clear();
    sent_before_.clear();
    queue_.clear();
    answered_count_ = 0;
    first_refused_ = none;
    ::clock_gettime(CLOCK_REALTIME, &now_);
  }

  void add(std::string_view msg) {
    if (format_.header_size() + msg.size() > o_.max_message) {
      std::size_t cut = o_.max_message > format_.header_size() ? o_.max_message - format_.header_size() : 0;
      while (cut > 0 && (static_cast<unsigned char>(msg[cut]) & 0xC0) == 0x80) --cut;
      msg = msg.substr(0, cut);
      ++truncated_;
    }
    // Octet counting's "LEN " is dropped: RELP's DATALEN frames it, and an
    // inner LF stays as it is.
    tmp_.clear();
    format_.append(tmp_, msg, now_);
    queue_.push_back(msgs_.size());
    msgs_.push_back(tmp_.substr(tmp_.find(' ') + 1));
    answered_.push_back(false);
    sent_before_.push_back(false);
  }

  std::uint32_t next_txnr() noexcept {
    const std::uint32_t t = txnr_;
    txnr_ = txnr_ == max_txnr ? 1 : txnr_ + 1;
    return t;
  }

  // Sends what the window has room for; without a session, the batch waits.
  void pump() {
    if (!open_) {
      arm_give_up();
      return;
    }
    std::string out;
    while (!queue_.empty() && pending_.size() < o_.window) {
      const std::size_t i = queue_.front();
      queue_.pop_front();
      if (sent_before_[i]) ++resent_;
      sent_before_[i] = true;
      const std::uint32_t t = next_txnr();
      append_relp_frame(out, t, "syslog", msgs_[i]);
      pending_.push_back({t, i});
    }
    if (!out.empty()) sock_->write(std::move(out));
  }

  void on_data(net::socket* s, std::string_view bytes) {
    if (s != sock_.get() || s->destroyed()) return;
    if (!reader_.feed(bytes, [&](const relp_frame& f) { on_frame(s, f); })) protocol_error(s, reader_.error());
  }

  void protocol_error(net::socket* s, const std::string& why) {
    if (s != sock_.get() || s->destroyed()) return;
    last_error_ = user_error(why);
    conn_error_ = last_error_;
    s->destroy();
  }

  void on_frame(net::socket* s, const relp_frame& f) {
    if (s != sock_.get() || s->destroyed()) return;  // a frame after an error
    if (f.command == "serverclose") {
      last_error_ = conn_error_ = user_error("RELP: the receiver closed the session (serverclose)");
      s->destroy();
      return;
    }
    if (f.command != "rsp") return protocol_error(s, "RELP: the receiver sent '" + cut_text(f.command) + "', not rsp");
    const int code = relp_rsp_code(f.data);
    if (open_txnr_ != 0 && f.txnr == open_txnr_) {
      open_txnr_ = 0;
      if (code != 200) return protocol_error(s, "RELP: the receiver refused the session: rsp " + cut_text(f.data));
      session_open();
      return;
    }
    if (final_ && f.txnr == close_txnr_) {
      s->end();
      return;
    }
    auto it = pending_.begin();
    while (it != pending_.end() && it->txnr != f.txnr) ++it;
    if (it == pending_.end()) return protocol_error(s, "RELP: rsp for transaction " + std::to_string(f.txnr) + ", which is not open");
    const std::size_t i = it->index;
    pending_.erase(it);
    answered_[i] = true;
    ++answered_count_;
    if (code == 200) {
      ++acked_;
    } else {
      ++refused_;
      if (first_refused_ == none || i < first_refused_) {
        first_refused_ = i;
        refusal_ = user_error("RELP: the receiver refused a message: rsp " + cut_text(f.data));
      }
    }
    if (answered_count_ == msgs_.size()) {
      // From the loop, not from inside the socket's 'data': the callbacks
      // may destroy the stream, and this sink with it.
      const std::size_t landed = first_refused_ == none ? 0 : first_refused_;
      const std::error_code ec = first_refused_ == none ? std::error_code{} : refusal_;
      loop_->next_tick([this, ec, landed] { complete(ec, landed); }, this);
      return;
    }
    pump();
  }

  void session_open() {
    if (ever_open_) ++reconnects_;
    ever_open_ = true;
    open_ = true;
    backoff_ = o_.reconnect_min;
    if (give_up_timer_) {
      loop_->clear_timeout(give_up_timer_);
      give_up_timer_ = 0;
    }
    if (done_) pump();
  }

  // The messages answered 200 from the batch's first on: those whose
  // callbacks hear success when the batch fails.
  std::size_t acked_prefix() const noexcept {
    std::size_t n = 0;
    while (n < answered_.size() && answered_[n] && n != first_refused_) ++n;
    return n;
  }

  void complete(std::error_code ec, std::size_t landed, bool count_failed = true) noexcept {
    if (!done_) return;
    const write_done done = *done_;
    done_.reset();
    if (ec && count_failed) failed_ += msgs_.size() - landed;
    pending_.clear();
    queue_.clear();
    msgs_.clear();  // an idle writable holds no messages
    done(ec, landed);
    // Touch nothing here: done() may have destroyed the stream and this sink.
  }

  void connect_now() {
    retry_timer_ = 0;
    if (destroyed_ || ending_) return;
    old_ = std::move(sock_);  // never deleted inside its own event
    net::socket_options so;
    so.event_loop = loop_;
    sock_ = std::make_unique<net::socket>(so);
    reader_ = relp_frame_reader();
    txnr_ = 1;
    open_txnr_ = 0;
    net::socket* s = sock_.get();
    s->on(event::connect, [this, s] { on_connect(s); });
    s->on(event::data, [this, s](std::string_view b) { on_data(s, b); });
    s->on(event::end, [this, s] {
      if (!s->destroyed()) s->destroy();
    });
    conn_error_ = {};
    s->on(event::error, [this, s](std::error_code ec) {
      last_error_ = ec;
      if (s == sock_.get()) conn_error_ = ec;
    });
    s->on(event::close, [this, s](const event_arg& a) { on_close(s, a.error); });
    s->connect(o_.port, o_.host);
  }

  void on_connect(net::socket* s) {
    if (s != sock_.get()) return;
    open_txnr_ = next_txnr();
    std::string out;
    append_relp_frame(out, open_txnr_, "open", "relp_version=0\nrelp_software=sluice\ncommands=syslog");
    s->write(std::move(out));
  }

  void on_close(net::socket* s, std::error_code err) {
    if (dying_ || s != sock_.get()) return;
    open_ = false;
    if (!err) err = conn_error_;
    if (final_) {
      if (close_timer_) loop_->clear_timeout(close_timer_);
      close_timer_ = 0;
      const final_done done = *final_;
      final_.reset();
      // Every message was answered before `close`: a session that breaks
      // now loses nothing.
      done();
      return;
    }
    // The unanswered go first on the next session, in their order: every
    // one sent is older than every one still queued.
    for (auto it = pending_.rbegin(); it != pending_.rend(); ++it) queue_.push_front(it->index);
    pending_.clear();
    if (destroyed_ || ending_) return;
    if (done_) arm_give_up();
    retry_timer_ = loop_->set_timeout(backoff_, [this] { connect_now(); }, this);
    backoff_ = std::min(backoff_ * 2, o_.reconnect_max);
  }

  void arm_give_up() {
    if (!o_.give_up_after || give_up_timer_ || open_ || !done_) return;
    give_up_timer_ = loop_->set_timeout(*o_.give_up_after, [this] {
      give_up_timer_ = 0;
      if (open_) return;
      complete(last_error_ ? last_error_ : std::make_error_code(std::errc::timed_out), acked_prefix());
    }, this);
  }

  void cancel_timers() noexcept {
    if (!loop_) return;
    if (retry_timer_) loop_->clear_timeout(retry_timer_);
    if (give_up_timer_) loop_->clear_timeout(give_up_timer_);
    retry_timer_ = give_up_timer_ = 0;
  }

  relp_options o_;
  syslog_formatter format_;
  loop* loop_ = nullptr;
  std::unique_ptr<net::socket> sock_;
  std::unique_ptr<net::socket> old_;
  relp_frame_reader reader_;
  // The batch: its messages framed for `syslog`, which are answered, which
  // were sent on an earlier session, and those not sent on this one.
  std::optional<write_done> done_;
  std::vector<std::string> msgs_;
  std::vector<bool> answered_;
  std::vector<bool> sent_before_;
  std::deque<std::size_t> queue_;
  std::deque<txn> pending_;  // sent on this session, unanswered, oldest first
  std::size_t answered_count_ = 0;
  std::size_t first_refused_ = none;
  std::error_code refusal_;
  std::string tmp_;
  timespec now_{};
  std::uint32_t txnr_ = 1;
  std::uint32_t open_txnr_ = 0;
  std::uint32_t close_txnr_ = 0;
  std::optional<final_done> final_;
  std::error_code last_error_;
  std::error_code conn_error_;
  std::chrono::milliseconds backoff_;
  timer_id retry_timer_ = 0;
  timer_id give_up_timer_ = 0;
  timer_id close_timer_ = 0;
  std::size_t acked_ = 0;
  std::size_t resent_ = 0;
  std::size_t failed_ = 0;
  std::size_t refused_ = 0;
  std::size_t reconnects_ = 0;
  std::size_t truncated_ = 0;
  bool open_ = false;
  bool ever_open_ = false;
  bool ending_ = false;
  bool destroyed_ = false;
  bool dying_ = false;
};

namespace {
writable_options stream_options(const relp_options& o) {
  writable_options w = o.stream;
  w.object_mode = true;
  if (!w.high_water_mark) w.high_water_mark = std::max<std::size_t>(o.window, 1);
  return w;
}
}  // namespace

}  // namespace detail

relp_writable::relp_writable(const relp_options& options)
    : writable(std::make_unique<detail::relp_sink>(options), detail::stream_options(options)) {}

relp_writable::~relp_writable() = default;

const detail::relp_sink& relp_writable::transport() const noexcept {
  return static_cast<const detail::relp_sink&>(get_sink());
}
std::size_t relp_writable::acked() const noexcept { return transport().acked(); }
std::size_t relp_writable::resent() const noexcept { return transport().resent(); }
std::size_t relp_writable::in_flight() const noexcept { return transport().in_flight(); }
std::size_t relp_writable::dropped() const noexcept { return dropped_ + transport().failed(); }
std::size_t relp_writable::refused() const noexcept { return transport().refused(); }
std::size_t relp_writable::reconnects() const noexcept { return transport().reconnects(); }
std::size_t relp_writable::truncated() const noexcept { return transport().truncated(); }
bool relp_writable::connected() const noexcept { return transport().connected(); }

std::error_code relp_writable::destroy_io(std::error_code err) noexcept {
  dropped_ += writable_length();
  return get_sink().destroy(err);
}

}  // namespace sluice
