#include "sluice/loop.h"

#include <poll.h>

#include <cerrno>
#include <system_error>

namespace sluice {

void loop::ring::push(queued q) {
  if (count_ == slots_.size()) {
    std::vector<queued> bigger(slots_.empty() ? 64 : slots_.size() * 2);
    for (std::size_t i = 0; i < count_; ++i)
      bigger[i] = std::move(slots_[(head_ + i) & (slots_.size() - 1)]);
    slots_ = std::move(bigger);
    head_ = 0;
  }
  slots_[(head_ + count_) & (slots_.size() - 1)] = std::move(q);
  ++count_;
}

loop::queued loop::ring::pop() {
  queued q = std::move(slots_[head_]);
  head_ = (head_ + 1) & (slots_.size() - 1);
  --count_;
  return q;
}

void loop::ring::cancel(const void* owner) noexcept {
  // Compacts in place, keeping the order of the others.
  const std::size_t mask = slots_.size() - 1;
  std::size_t kept = 0;
  for (std::size_t i = 0; i < count_; ++i) {
    queued& q = slots_[(head_ + i) & mask];
    if (q.owner == owner) {
      q.fn = nullptr;
      continue;
    }
    if (kept != i) slots_[(head_ + kept) & mask] = std::move(q);
    ++kept;
  }
  count_ = kept;
}

loop::loop() = default;
loop::~loop() = default;

loop& loop::current() {
  thread_local loop instance;
  return instance;
}

void loop::poke() {
  if (running_ == 0 && wakeup_) wakeup_();
}

void loop::next_tick(task t, const void* owner) {
  ticks_.push({owner, std::move(t)});
  poke();
}

void loop::set_immediate(task t, const void* owner) {
  immediates_.push({owner, std::move(t)});
  poke();
}

void loop::watch(int fd, short events, fd_task t, const void* owner) {
  watches_.push_back({fd, events, owner, std::move(t)});
  poke();
}

void loop::cancel(const void* owner) noexcept {
  if (owner == nullptr) return;
  ticks_.cancel(owner);
  immediates_.cancel(owner);
  for (auto& w : watches_)
    if (w.owner == owner) w.fn = nullptr;
  std::erase_if(watches_, [](const watch_entry& w) { return !w.fn; });
}

bool loop::alive() const noexcept {
  return !ticks_.empty() || !immediates_.empty() || !watches_.empty();
}

void loop::drain_ticks() {
  while (!ticks_.empty()) {
    queued q = ticks_.pop();
    if (q.fn) q.fn();
  }
}

void loop::run_until_idle() {
  ++running_;
  for (;;) {
    drain_ticks();
    if (immediates_.empty()) break;
    // One turn: the immediates queued before it, each followed by the ticks it
    // queued, as Node runs setImmediate callbacks.
    for (std::size_t n = immediates_.size(); n > 0 && !immediates_.empty(); --n) {
      queued q = immediates_.pop();
      if (q.fn) q.fn();
      drain_ticks();
    }
  }
  --running_;
}

std::vector<loop::watched_fd> loop::watched_fds() const {
  std::vector<watched_fd> out;
  out.reserve(watches_.size());
  for (const auto& w : watches_) out.push_back({w.fd, w.events});
  return out;
}

void loop::dispatch_ready(int fd, short revents) {
  for (std::size_t i = 0; i < watches_.size(); ++i) {
    if (watches_[i].fd != fd) continue;
    const short mask = watches_[i].events | POLLERR | POLLHUP | POLLNVAL;
    if (!(revents & mask)) continue;
    // One-shot: removed before the call, which may watch again.
    fd_task fn = std::move(watches_[i].fn);
    watches_.erase(watches_.begin() + static_cast<std::ptrdiff_t>(i));
    if (fn) fn(revents);
    return;
  }
}

bool loop::poll_watches(int timeout_ms) {
  std::vector<pollfd> fds;
  fds.reserve(watches_.size());
  for (const auto& w : watches_) fds.push_back({w.fd, w.events, 0});
  int n;
  do {
    n = ::poll(fds.data(), fds.size(), timeout_ms);
  } while (n < 0 && errno == EINTR);
  if (n < 0) throw std::system_error(errno, std::system_category(), "poll");
  for (const auto& p : fds)
    if (p.revents) dispatch_ready(p.fd, p.revents);
  return n > 0;
}

void loop::run() {
  ++running_;
  for (;;) {
    run_until_idle();
    if (watches_.empty()) break;
    poll_watches(-1);
  }
  --running_;
}

}  // namespace sluice
