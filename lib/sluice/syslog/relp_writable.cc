// The RELP writable's sink. Each message the stream hands over (one write()
// at a time) is framed as a `syslog` transaction and goes into the window;
// the write completes at once while the window has room, so the next
// message follows without waiting for any answer, and the message's
// callback is taken out of the stream and called when its answer comes.
// A full window holds the write in flight until an answer makes room. A
// lost session is replaced (reconnecting_socket), and the window's
// unanswered messages are sent again, in order, on the next one (txnrs
// start again at 1 on each session, as librelp's receiver expects).
#include "sluice/syslog/relp_writable.h"

#include <algorithm>
#include <cerrno>
#include <deque>
#include <limits>
#include <new>
#include <string_view>
#include <vector>

#include "sluice/base/errors.h"
#include "sluice/syslog/detail/reconnecting_socket.h"
#include "sluice/sinks/sink.h"
#include "sluice/syslog/relp_frames.h"

namespace sluice {
namespace detail {

namespace {
constexpr std::uint32_t max_txnr = 999'999'999;
// How long end() waits for the answer to `close` (every message is
// answered by then: nothing is at stake but the connection).
constexpr std::chrono::milliseconds close_wait{5000};
// Every refusal's error begins so (is_refusal() knows them by it: user_error
// codes carry only their message).
constexpr std::string_view refusal_prefix = "RELP: the receiver refused a message: rsp ";

std::string cut_text(std::string_view s) {
  std::string t(s.substr(0, 80));
  for (char& c : t)
    if (c < 32 || c > 126) c = ' ';
  return t;
}

reconnect_options reconnect_options_of(const relp_options& o) {
  reconnect_options r;
  r.host = o.host;
  r.port = o.port;
  r.alternates = o.alternates;
  r.reconnect_min = o.reconnect_min;
  r.reconnect_max = o.reconnect_max;
  r.give_up_after = o.give_up_after;
  return r;
}
}  // namespace

class relp_sink final : public sink {
 public:
  explicit relp_sink(const relp_options& o)
      : sink({.final = true}), o_(o), format_(o.header, syslog_framing::octet_counting), rc_(reconnect_options_of(o), hooks()) {
    if (o_.window == 0) o_.window = 1;
  }
  ~relp_sink() override {
    *alive_ = false;
    if (loop_) loop_->cancel(this);
    if (loop_ && answer_timer_) loop_->clear_timeout(answer_timer_);
    if (loop_ && close_timer_) loop_->clear_timeout(close_timer_);
    rc_.release();
    // Callbacks still owed (the writable went away first) hear why.
    const auto gone = make_error_code(errc::destroyed);
    for (auto& [cb, ec] : settled_)
      if (cb) cb(ec ? ec : gone);
    for (msg& m : window_)
      if (m.cb) m.cb(gone);
  }

  void attach(loop& l) override {
    if (loop_) return;
    loop_ = &l;
    rc_.start(l);
  }

  // Node: _write(). Into the window, or held until it has room.
  void write(std::string_view chunk, write_done done) override {
    if (window_.size() >= o_.window) {
      stalled_.emplace(stalled_write{chunk, done});
      return;
    }
    take(chunk, done);
  }

  // Every write is done: once the window is answered too, close the
  // session (`close`, its answer), then the connection.
  void final(final_done done) override {
    final_.emplace(done);
    close_when_answered();
  }

  void destroy(std::error_code err, destroy_done done) noexcept override {
    destroyed_ = true;
    rc_.stop();
    final_.reset();
    // The write held for room is the stream's to count; the window's are
    // counted here.
    if (stalled_) {
      const write_done done = stalled_->done;
      stalled_.reset();
      loop_->next_tick([done] { done(make_error_code(errc::destroyed)); }, this);
    }
    fail_window(make_error_code(errc::destroyed));
    if (rc_.current() && !rc_.current()->destroyed()) rc_.current()->destroy();
    done(err);
  }

  std::size_t acked() const noexcept { return acked_; }
  std::size_t resent() const noexcept { return resent_; }
  std::size_t in_flight() const noexcept { return unanswered_; }
  std::size_t failed() const noexcept { return failed_; }
  std::size_t refused() const noexcept { return refused_; }
  std::size_t reconnects() const noexcept { return rc_.reconnects(); }
  std::size_t truncated() const noexcept { return truncated_; }
  std::size_t timeouts() const noexcept { return timeouts_; }
  bool connected() const noexcept { return open_; }

 private:
  // A message taken from the stream and not yet settled: its `syslog` DATA,
  // its callback, and its txnr on this session (0: not sent on it yet).
  struct msg {
    std::string data;
    write_cb cb;
    std::uint32_t txnr = 0;
    bool sent_before = false;  // on an earlier session
    bool answered = false;     // answered out of order, ahead of an older one
  };
  struct stalled_write {
    std::string_view chunk;
    write_done done;
  };

  reconnecting_socket::hooks hooks() {
    reconnecting_socket::hooks h;
    h.wrap = o_.wrap;
    h.on_connect = [this](duplex& s) { on_connect(s); };
    h.on_data = [this](duplex& s, std::string_view b) { on_data(s, b); };
    h.on_end = [this](duplex& s) { on_end(s); };
    h.on_close = [this](std::error_code ec) { on_close(ec); };
    h.on_give_up = [this](std::error_code ec) { give_up(ec); };
    return h;
  }

  // The message joins the window, its callback now the sink's; sent at
  // once on an open session. The write completes last: the stream may hand
  // over the next message from inside done().
  void take(std::string_view chunk, write_done done) {
    const std::size_t header = o_.as_is ? 0 : format_.header_size();
    if (header + chunk.size() > o_.max_message) {
      std::size_t cut = o_.max_message > header ? o_.max_message - header : 0;
      while (cut > 0 && (static_cast<unsigned char>(chunk[cut]) & 0xC0) == 0x80) --cut;
      chunk = chunk.substr(0, cut);
      ++truncated_;
    }
    msg& m = window_.emplace_back();
    if (o_.as_is) {
      m.data.assign(chunk);
    } else {
      timespec now{};
      ::clock_gettime(CLOCK_REALTIME, &now);
      // Octet counting's "LEN " is dropped: RELP's DATALEN frames it, and an
      // inner LF stays as it is.
      tmp_.clear();
      format_.append(tmp_, chunk, now);
      m.data.assign(tmp_, tmp_.find(' ') + 1);
    }
    m.cb = done.take_callback();
    if (open_) send_from(window_.size() - 1);
    else rc_.wait_for_connection();
    done();
  }

  std::uint32_t next_txnr() noexcept {
    const std::uint32_t t = txnr_;
    txnr_ = txnr_ == max_txnr ? 1 : txnr_ + 1;
    return t;
  }

  // Frames the window's messages from `i` on that this session has not
  // sent; the frames go out together at the end of the tick.
  void send_from(std::size_t i) {
    if (unanswered_ == 0 && open_txnr_ == 0) progress_ = std::chrono::steady_clock::now();
    for (; i < window_.size(); ++i) {
      msg& m = window_[i];
      if (m.txnr != 0 || m.answered) continue;
      if (m.sent_before) ++resent_;
      m.sent_before = true;
      m.txnr = next_txnr();
      append_relp_frame(out_, m.txnr, "syslog", m.data);
      ++unanswered_;
    }
    schedule_flush();
  }

  void schedule_flush() {
    if (flush_pending_ || out_.empty()) return;
    flush_pending_ = true;
    loop_->next_tick([this] {
      flush_pending_ = false;
      if (!out_.empty() && rc_.current() && !rc_.current()->destroyed()) rc_.current()->write(std::move(out_));
      out_.clear();
      arm_answer_timer();
    }, this);
  }

  // ---- answers

  void on_data(duplex& s, std::string_view bytes) {
    progress_ = std::chrono::steady_clock::now();
    if (!reader_.feed(bytes, [&](const relp_frame& f) {
          if (!s.destroyed()) on_frame(s, f);
        }))
      protocol_error(reader_.error());
  }

  void protocol_error(const std::string& why) { rc_.fail(user_error(why)); }

  // The receiver ended the connection. With transactions unanswered, that
  // is the error the connection ends with; before the open was answered,
  // on_close() says so. After `close` was answered, or with nothing at
  // stake, it is a clean end.
  void on_end(duplex& s) {
    if (s.destroyed()) return;
    if (open_ && unanswered_ > 0 && close_txnr_ == 0)
      return rc_.fail(user_error("RELP: the receiver closed the connection with transactions unanswered"));
    s.destroy();
  }

  void on_frame(duplex& s, const relp_frame& f) {
    if (f.command == "serverclose") return rc_.fail(user_error("RELP: the receiver closed the session (serverclose)"));
    if (f.command != "rsp") return protocol_error("RELP: the receiver sent '" + cut_text(f.command) + "', not rsp");
    const int code = relp_rsp_code(f.data);
    if (open_txnr_ != 0 && f.txnr == open_txnr_) {
      open_txnr_ = 0;
      if (code != 200) return protocol_error("RELP: the receiver refused the session: rsp " + cut_text(f.data));
      session_open();
      return;
    }
    if (close_txnr_ != 0 && f.txnr == close_txnr_) {
      s.end();
      return;
    }
    // Answers come in order, as librelp's server sends them: the oldest
    // unanswered is the first one looked at.
    std::size_t i = 0;
    while (i < window_.size() && (window_[i].txnr != f.txnr || window_[i].txnr == 0 || window_[i].answered)) ++i;
    if (i == window_.size())
      return protocol_error("RELP: rsp for transaction " + std::to_string(f.txnr) + ", which is not open");
    --unanswered_;
    msg& m = window_[i];
    m.answered = true;
    std::error_code ec;
    if (code == 200) {
      ++acked_;
    } else {
      // Only this message failed: the receiver took or will take the
      // others, so the stream goes on.
      ++refused_;
      ++failed_;
      ec = user_error(std::string(refusal_prefix) + cut_text(f.data));
    }
    settled_.emplace_back(std::move(m.cb), ec);
    while (!window_.empty() && window_.front().answered) window_.pop_front();
    schedule_settle();
  }

  // Callbacks, and whatever the room they leave allows, run from the loop,
  // not from inside the socket's 'data': they may destroy the stream.
  void schedule_settle() {
    if (settle_pending_) return;
    settle_pending_ = true;
    loop_->next_tick([this] { settle(); }, this);
  }

  void settle() {
    settle_pending_ = false;
    const std::shared_ptr<bool> alive = alive_;
    std::vector<std::pair<write_cb, std::error_code>> now;
    now.swap(settled_);
    for (auto& [cb, ec] : now) {
      if (cb) cb(ec);
      if (!*alive) return;  // a callback deleted the writable
    }
    if (destroyed_) return;
    // Each answer lets the next message in at once: waiting for more room
    // (TCP's silly-window avoidance) was measured 3x slower into rsyslog's
    // imrelp, which answers as it goes.
    if (stalled_ && window_.size() < o_.window) {
      const stalled_write w = *stalled_;
      stalled_.reset();
      take(w.chunk, w.done);
      return;  // take()'s done() may have ended the stream
    }
    close_when_answered();
  }

  void session_open() {
    open_ = true;
    rc_.established();
    send_from(0);
    arm_answer_timer();
  }

  // ---- the answer timeout

  void arm_answer_timer() {
    if (!o_.answer_timeout || answer_timer_ || (unanswered_ == 0 && open_txnr_ == 0)) return;
    const auto left = *o_.answer_timeout - std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - progress_);
    answer_timer_ = loop_->set_timeout(std::max(left, std::chrono::milliseconds(1)), [this] {
      answer_timer_ = 0;
      if (unanswered_ == 0 && open_txnr_ == 0) return;
      if (std::chrono::steady_clock::now() - progress_ < *o_.answer_timeout) return arm_answer_timer();
      ++timeouts_;
      rc_.fail(user_error("RELP: no answer from the receiver for " + std::to_string(o_.answer_timeout->count()) +
                          " ms: the session is treated as lost"));
    }, this);
  }

  // ---- sessions

  void on_connect(duplex& s) {
    reader_ = relp_frame_reader();
    txnr_ = 1;
    open_txnr_ = next_txnr();
    progress_ = std::chrono::steady_clock::now();
    std::string out;
    append_relp_frame(out, open_txnr_, "open", "relp_version=0\nrelp_software=sluice\ncommands=syslog");
    s.write(std::move(out));
    arm_answer_timer();
  }

  void on_close(std::error_code ec) {
    // A receiver that accepts and closes (or resets, when the open reached
    // it closed already) before it answered the open: said so, as what a
    // give-up reports once no session opens, rather than ETIMEDOUT or a
    // bare reset.
    if (open_txnr_ != 0 && (!ec || ec == std::error_code(ECONNRESET, std::system_category()) ||
                            ec == std::error_code(EPIPE, std::system_category()))) {
      ec = user_error("RELP: the receiver closed the connection before answering the open");
      rc_.set_last_error(ec);
    }
    open_ = false;
    open_txnr_ = 0;
    unanswered_ = 0;
    out_.clear();
    if (answer_timer_) loop_->clear_timeout(answer_timer_);
    answer_timer_ = 0;
    // Every unanswered message goes again on the next session, in its
    // place in the window.
    for (msg& m : window_) m.txnr = 0;
    if (final_ && close_txnr_ != 0) {
      if (close_timer_) loop_->clear_timeout(close_timer_);
      close_timer_ = 0;
      const final_done done = *final_;
      final_.reset();
      // Every message was answered before `close`: a session that breaks
      // now loses nothing.
      done();
      return;
    }
    if (ec && !destroyed_ && o_.fatal_error && o_.fatal_error(ec)) {
      // No reconnect would mend it (a certificate refused).
      rc_.stop();
      return give_up(ec);
    }
    if (!window_.empty() || stalled_) rc_.wait_for_connection();
  }

  // end(): the window is answered (and no write is held): close the
  // session, or, without one, the connection.
  void close_when_answered() {
    if (!final_ || !window_.empty() || stalled_ || close_txnr_ != 0) return;
    rc_.stop();
    duplex* s = rc_.current();
    if (!open_ || !s || s->destroyed()) {
      if (s && !s->destroyed()) s->destroy();
      const final_done done = *final_;
      final_.reset();
      done();
      return;
    }
    close_txnr_ = next_txnr();
    std::string out = std::move(out_);
    out_.clear();
    append_relp_frame(out, close_txnr_, "close", {});
    s->write(std::move(out));
    close_timer_ = loop_->set_timeout(close_wait, [this] {
      close_timer_ = 0;
      if (rc_.current() && !rc_.current()->destroyed()) rc_.current()->destroy();
    }, this);
  }

  // give_up_after ran out with no session: every message in the window,
  // and the write held for room, fail with `ec`, and the stream with them.
  void give_up(std::error_code ec) {
    if (open_ || destroyed_) return;
    fail_window(ec);
    if (stalled_) {
      const write_done done = stalled_->done;
      stalled_.reset();
      done(ec);  // the stream errors, and destroys this sink's transport
    } else {
      report_error(ec);
    }
  }

  void fail_window(std::error_code ec) {
    for (msg& m : window_) {
      if (m.answered) continue;
      ++failed_;
      settled_.emplace_back(std::move(m.cb), ec);
    }
    window_.clear();
    unanswered_ = 0;
    if (!settled_.empty() && loop_) schedule_settle();
  }

  relp_options o_;
  syslog_formatter format_;
  loop* loop_ = nullptr;
  reconnecting_socket rc_;
  relp_frame_reader reader_;
  std::shared_ptr<bool> alive_ = std::make_shared<bool>(true);
  // Oldest first: taken from the stream, not yet answered (or answered
  // ahead of an older one). Its size is what the window holds.
  std::deque<msg> window_;
  std::optional<stalled_write> stalled_;
  std::vector<std::pair<write_cb, std::error_code>> settled_;  // to call back
  std::string out_;  // frames to write at the end of the tick
  std::string tmp_;
  std::size_t unanswered_ = 0;
  std::uint32_t txnr_ = 1;
  std::uint32_t open_txnr_ = 0;
  std::uint32_t close_txnr_ = 0;
  std::chrono::steady_clock::time_point progress_{};  // the last answer, or the first send after none was due
  std::optional<final_done> final_;
  timer_id answer_timer_ = 0;
  timer_id close_timer_ = 0;
  std::size_t acked_ = 0;
  std::size_t resent_ = 0;
  std::size_t failed_ = 0;
  std::size_t refused_ = 0;
  std::size_t truncated_ = 0;
  std::size_t timeouts_ = 0;
  bool open_ = false;
  bool flush_pending_ = false;
  bool settle_pending_ = false;
  bool destroyed_ = false;
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

relp_writable::relp_writable(std::unique_ptr<detail::relp_sink> s, const relp_options& options)
    : typed_writable(std::move(s), detail::stream_options(options)) {}

relp_writable::~relp_writable() = default;

std::unique_ptr<relp_writable> make_relp_writable(const relp_options& options) {
  if (const char* why = detail::syslog_header_problem(options.header))
    throw stream_error(std::make_error_code(std::errc::invalid_argument), why);
  return std::unique_ptr<relp_writable>(new relp_writable(std::make_unique<detail::relp_sink>(options), options));
}

std::unique_ptr<relp_writable> make_relp_writable(const relp_options& options, std::error_code& ec) noexcept {
  ec.clear();
  if (detail::syslog_header_problem(options.header)) {
    ec = std::make_error_code(std::errc::invalid_argument);
    return nullptr;
  }
  try {
    return std::unique_ptr<relp_writable>(new relp_writable(std::make_unique<detail::relp_sink>(options), options));
  } catch (const std::bad_alloc&) {
    ec = std::make_error_code(std::errc::not_enough_memory);
  }
  return nullptr;
}

std::size_t relp_writable::acked() const noexcept { return get_sink().acked(); }
std::size_t relp_writable::resent() const noexcept { return get_sink().resent(); }
std::size_t relp_writable::in_flight() const noexcept { return get_sink().in_flight(); }
std::size_t relp_writable::dropped() const noexcept { return dropped_ + get_sink().failed(); }
std::size_t relp_writable::refused() const noexcept { return get_sink().refused(); }
std::size_t relp_writable::reconnects() const noexcept { return get_sink().reconnects(); }
std::size_t relp_writable::truncated() const noexcept { return get_sink().truncated(); }
std::size_t relp_writable::answer_timeouts() const noexcept { return get_sink().timeouts(); }
bool relp_writable::connected() const noexcept { return get_sink().connected(); }

bool relp_writable::is_refusal(std::error_code ec) noexcept {
  if (!ec) return false;
  try {
    // user_error()'s codes share one category; the prefix tells a refusal
    // from another message of it (a give-up's, say).
    static const std::error_category& user = user_error(detail::refusal_prefix).category();
    return ec.category() == user && ec.message().starts_with(detail::refusal_prefix);
  } catch (...) {  // bad_alloc copying the message: not known to be one
    return false;
  }
}

void relp_writable::destroy_io(std::error_code err, destroy_done done) noexcept {
  dropped_ += writable_length();
  writable::destroy_io(err, std::move(done));
}

}  // namespace sluice
