// reconnecting_socket: the socket's events are filtered to the current one
// here, so that a user's hooks never see a socket it has given up on.
#include "sluice/syslog/detail/reconnecting_socket.h"

#include <algorithm>

namespace sluice::detail {

reconnecting_socket::reconnecting_socket(const reconnect_options& options, hooks h)
    : o_(options), h_(std::move(h)), backoff_(options.reconnect_min) {}

reconnecting_socket::~reconnecting_socket() { release(); }

void reconnecting_socket::release() noexcept {
  dying_ = true;
  stop();
  if (loop_) loop_->cancel(this);
  conn_.reset();
  tcp_ = nullptr;
  old_.reset();
}

void reconnecting_socket::start(loop& l) {
  if (loop_) return;
  loop_ = &l;
  connect_now();
}

void reconnecting_socket::connect_now() {
  retry_timer_ = 0;
  if (stopped_) return;
  old_ = std::move(conn_);
  net::socket_options so;
  so.event_loop = loop_;
  auto sock = std::make_unique<net::socket>(so);
  tcp_ = sock.get();
  established_ = false;
  conn_error_ = {};
  if (!o_.unix_path.empty())
    sock->connect(std::string_view(o_.unix_path));
  else if (at_ == 0)
    sock->connect(o_.port, o_.host);
  else
    sock->connect(o_.alternates[at_ - 1].second, o_.alternates[at_ - 1].first);
  // The connect's events come from the loop: the wrapper, made now, sees them.
  if (h_.wrap)
    conn_ = h_.wrap(std::move(sock));
  else
    conn_ = std::move(sock);
  duplex* s = conn_.get();
  s->on(h_.wrap ? event::secure_connect : event::connect, [this, s] {
    if (!dying_ && s == conn_.get() && h_.on_connect) h_.on_connect(*s);
  });
  s->on(event::data, [this, s](std::string_view b) {
    if (!dying_ && s == conn_.get() && !s->destroyed() && h_.on_data) h_.on_data(*s, b);
  });
  s->on(event::end, [this, s] {
    if (dying_ || s != conn_.get()) return;
    if (h_.on_end)
      h_.on_end(*s);
    else if (!s->destroyed())
      s->destroy();
  });
  s->on(event::error, [this, s](std::error_code ec) {
    last_error_ = ec;
    if (s == conn_.get()) conn_error_ = ec;
  });
  s->on(event::close, [this, s](const event_arg& a) { on_close(s, a.error); });
}

void reconnecting_socket::established() noexcept {
  if (ever_established_) ++reconnects_;
  ever_established_ = true;
  established_ = true;
  backoff_ = o_.reconnect_min;
  if (give_up_timer_) loop_->clear_timeout(give_up_timer_);
  give_up_timer_ = 0;
}

void reconnecting_socket::on_close(duplex* s, std::error_code err) {
  if (dying_ || s != conn_.get()) return;
  // Never up: the next attempt goes to the next address.
  if (!established_ && !o_.alternates.empty()) at_ = (at_ + 1) % (o_.alternates.size() + 1);
  established_ = false;
  if (!err) err = conn_error_;
  if (!stopped_) {
    retry_timer_ = loop_->set_timeout(backoff_, [this] { connect_now(); }, this);
    backoff_ = std::min(backoff_ * 2, o_.reconnect_max);
  }
  if (h_.on_close) h_.on_close(err);
  // Touch nothing here: the hook may have ended this object's owner.
}

void reconnecting_socket::wait_for_connection() {
  if (!o_.give_up_after || give_up_timer_ || established_ || stopped_ || !loop_) return;
  give_up_timer_ = loop_->set_timeout(*o_.give_up_after, [this] {
    give_up_timer_ = 0;
    if (established_ || stopped_) return;
    if (h_.on_give_up) h_.on_give_up(last_error_ ? last_error_ : std::make_error_code(std::errc::timed_out));
  }, this);
}

void reconnecting_socket::stop() noexcept {
  stopped_ = true;
  cancel_timers();
}

void reconnecting_socket::fail(std::error_code why) noexcept {
  if (!conn_ || conn_->destroyed()) return;
  last_error_ = conn_error_ = why;
  conn_->destroy();
}

void reconnecting_socket::cancel_timers() noexcept {
  if (!loop_) return;
  if (retry_timer_) loop_->clear_timeout(retry_timer_);
  if (give_up_timer_) loop_->clear_timeout(give_up_timer_);
  retry_timer_ = give_up_timer_ = 0;
}

}  // namespace sluice::detail
