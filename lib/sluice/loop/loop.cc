#include "sluice/loop/loop.h"

#include <poll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <cassert>
#include <cerrno>
#include <new>
#include <stdexcept>
#include <system_error>
#include <utility>

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
loop::~loop() {
  if (driver_) std::exchange(driver_, nullptr)->detached();
  while (close_hook* h = close_head_) {
    remove_close_hook(*h);
    h->fn(*h, *this);
  }
  if (wake_fd_ >= 0) ::close(wake_fd_);
}

void loop::add_close_hook(close_hook& hook) noexcept {
  assert(hook.home == nullptr && hook.fn != nullptr);
  hook.home = this;
  hook.prev = close_tail_;
  hook.next = nullptr;
  (close_tail_ ? close_tail_->next : close_head_) = &hook;
  close_tail_ = &hook;
}

void loop::remove_close_hook(close_hook& hook) noexcept {
  if (hook.home != this) return;
  (hook.prev ? hook.prev->next : close_head_) = hook.next;
  (hook.next ? hook.next->prev : close_tail_) = hook.prev;
  hook.home = nullptr;
  hook.prev = hook.next = nullptr;
}

void loop::make_wake_fd() {
  if (wake_fd_.load(std::memory_order_relaxed) >= 0) return;
  // Room for a few posts, made here (on the loop's thread, inside hold(),
  // whose caller handles bad_alloc) rather than inside post() on a worker
  // thread, whose noexcept path would terminate the program.
  posted_.reserve(8);
  posted_swap_.reserve(8);
  const int fd = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (fd < 0) throw std::system_error(errno, std::system_category(), "eventfd");
  wake_fd_.store(fd, std::memory_order_release);
}

void loop::hold() {
  {
    // run() must have something to wait on while it waits for posts.
    std::lock_guard lock(posted_mutex_);
    make_wake_fd();
  }
  if (++holds_ == 1 && driver_) driver_->hold(true);
}

void loop::attach(loop_driver* d) {
  if (d == driver_) return;
  if (driver_) std::exchange(driver_, nullptr)->detached();
  driver_ = d;
  turn_requested_ = false;
  timer_armed_ = std::chrono::steady_clock::time_point::max();
  if (!d) return;
  for (const auto& p : pollfds_) d->watch(p.fd, p.events);
  if (!timers_.empty()) {
    timer_armed_ = timers_.front().due;
    d->arm_timer(timer_armed_);
  }
  if (holds_ > 0) d->hold(true);
  // Posts that came before the attachment wait in posted_; the turn takes them.
  request_turn();
}

void loop::request_turn() {
  if (turn_requested_) return;
  turn_requested_ = true;
  driver_->schedule();
}

// After a driver's callback: ticks were drained; immediates (queued by it or
// left by a turn) get a turn of their own, after the host's other work.
void loop::after_callbacks() {
  if (!immediates_.empty() || !ticks_.empty() || !microtasks_.empty()) request_turn();
}

void loop::run_turn() {
  turn_requested_ = false;
  ++running_;
  drain_posted();
  drain_ticks();
  run_timers();
  run_immediates();
  --running_;
  after_callbacks();
}

void loop::on_ready(int fd, short revents) {
  ++running_;
  dispatch(fd, revents);
  drain_ticks();
  --running_;
  after_callbacks();
}

void loop::on_timer() {
  timer_armed_ = std::chrono::steady_clock::time_point::max();
  ++running_;
  run_timers();
  --running_;
  if (driver_ && !timers_.empty()) {
    timer_armed_ = timers_.front().due;
    driver_->arm_timer(timer_armed_);
  }
  after_callbacks();
}

short loop::watched_events(int fd) const noexcept {
  if (fd < 0 || static_cast<std::size_t>(fd) >= by_fd_.size()) return 0;
  short events = 0;
  for (std::uint32_t i = by_fd_[static_cast<std::size_t>(fd)].head; i != no_slot; i = watches_[i].next_on_fd)
    events |= watches_[i].events;
  return events;
}

namespace {
// Orders timer_entry as a min-heap: earliest due first, then the oldest id.
struct later {
  template <class T>
  bool operator()(const T& a, const T& b) const noexcept {
    return a.due != b.due ? a.due > b.due : a.id > b.id;
  }
};
}  // namespace

timer_id loop::set_timeout(std::chrono::milliseconds delay, task t, const void* owner) {
  const timer_id id = next_timer_++;
  timers_.push_back({std::chrono::steady_clock::now() + delay, id, owner, std::move(t)});
  const auto due = timers_.back().due;
  std::push_heap(timers_.begin(), timers_.end(), later{});
  // Armed lazily: a cleared timer leaves the driver's timer as it is, which
  // then fires early, finds nothing due and arms for the next.
  if (driver_ && due < timer_armed_) {
    timer_armed_ = due;
    driver_->arm_timer(due);
  }
  return id;
}

void loop::clear_timeout(timer_id id) noexcept {
  for (auto& t : timers_)
    if (t.id == id) t.fn = nullptr;  // dropped when it comes due
  std::erase_if(timers_, [](const timer_entry& t) { return !t.fn; });
  std::make_heap(timers_.begin(), timers_.end(), later{});
}

void loop::run_timers() {
  if (timers_.empty()) return;
  const auto now = std::chrono::steady_clock::now();
  while (!timers_.empty() && timers_.front().due <= now) {
    std::pop_heap(timers_.begin(), timers_.end(), later{});
    task fn = std::move(timers_.back().fn);
    timers_.pop_back();
    if (fn) fn();
    drain_ticks();
  }
}

int loop::next_timeout_ms() const {
  if (timers_.empty()) return -1;
  const auto left = timers_.front().due - std::chrono::steady_clock::now();
  if (left <= std::chrono::steady_clock::duration::zero()) return 0;
  // Rounded up, so that a timer is never run early and then waited for again.
  return static_cast<int>(std::chrono::ceil<std::chrono::milliseconds>(left).count());
}

void loop::post(task t) {
  bool wake;
  {
    std::lock_guard lock(posted_mutex_);
    make_wake_fd();
    wake = posted_.empty();
    posted_.push_back(std::move(t));
  }
  if (!wake) return;
  // Set before other threads post; attach() takes what was posted before.
  if (loop_driver* d = driver_) {
    d->schedule();
  } else {
    const std::uint64_t one = 1;
    // Only EAGAIN can fail here (the counter is full): the loop is awake then.
    [[maybe_unused]] ssize_t n = ::write(wake_fd_, &one, sizeof one);
  }
}

void loop::drain_posted() {
  // No eventfd: nothing was ever posted. It is made once, under the lock,
  // and never changes after.
  if (wake_fd_.load(std::memory_order_acquire) < 0) return;
  {
    std::lock_guard lock(posted_mutex_);
    if (posted_.empty()) return;
    std::swap(posted_, posted_swap_);
    std::uint64_t count;
    [[maybe_unused]] ssize_t n = ::read(wake_fd_, &count, sizeof count);
  }
  for (auto& t : posted_swap_) ticks_.push({nullptr, std::move(t)});
  posted_swap_.clear();
}

char* loop::borrow_read_buffer() noexcept {
  if (read_buffer_lent_) return nullptr;
  if (!read_buffer_) {
    read_buffer_.reset(new (std::nothrow) char[shared_read_size]);
    if (!read_buffer_) return nullptr;
  }
  read_buffer_lent_ = true;
  return read_buffer_.get();
}

loop& loop::current() {
  thread_local loop instance;
  return instance;
}

void loop::next_tick(task t, const void* owner) {
  ticks_.push({owner, std::move(t)});
  // Inside a turn or a callback the ticks drain before it ends.
  if (driver_ && running_ == 0) [[unlikely]]
    request_turn();
}

void loop::queue_microtask(task t, const void* owner) {
  microtasks_.push({owner, std::move(t)});
  if (driver_ && running_ == 0) [[unlikely]]
    request_turn();
}

void loop::set_immediate(task t, const void* owner) {
  immediates_.push({owner, std::move(t)});
  // Even inside a turn: an immediate queued there runs in the next one,
  // which the host schedules after its own ready work.
  if (driver_) [[unlikely]]
    request_turn();
}

void loop::watch(int fd, short events, fd_task t, const void* owner) {
  // poll() would skip it and a driver could not index it: it would never fire.
  if (fd < 0) throw std::invalid_argument("sluice::loop::watch: negative fd");
  const auto f = static_cast<std::size_t>(fd);
  // Everything that can throw comes first; linking the watch in cannot.
  if (f >= by_fd_.size()) by_fd_.resize(f + 1);
  // +1: poll_watches() appends the eventfd.
  if (pollfds_.capacity() < pollfds_.size() + 2) pollfds_.reserve(2 * pollfds_.size() + 8);
  if (poll_slots_.capacity() < poll_slots_.size() + 1) poll_slots_.reserve(2 * poll_slots_.size() + 8);
  std::uint32_t slot = free_slots_;
  if (slot == no_slot) {
    if (watches_.size() >= no_slot) throw std::length_error("sluice::loop::watch: too many watches");
    watches_.push_back({});
    slot = static_cast<std::uint32_t>(watches_.size() - 1);
  } else {
    free_slots_ = watches_[slot].next_on_fd;
  }
  fd_watches& list = by_fd_[f];
  watch_entry& w = watches_[slot];
  w.fd = fd;
  w.events = events;
  w.seq = ++watch_seq_;
  w.owner = owner;
  w.fn = std::move(t);
  w.prev_on_fd = list.tail;
  w.next_on_fd = no_slot;
  (list.tail == no_slot ? list.head : watches_[list.tail].next_on_fd) = slot;
  list.tail = slot;
  w.poll_index = static_cast<std::uint32_t>(pollfds_.size());
  pollfds_.push_back({fd, events, 0});
  poll_slots_.push_back(slot);
  ++watch_count_;
  if (driver_) driver_->watch(fd, events);
}

void loop::remove_watch(std::uint32_t slot) noexcept {
  watch_entry& w = watches_[slot];
  fd_watches& list = by_fd_[static_cast<std::size_t>(w.fd)];
  (w.prev_on_fd == no_slot ? list.head : watches_[w.prev_on_fd].next_on_fd) = w.next_on_fd;
  (w.next_on_fd == no_slot ? list.tail : watches_[w.next_on_fd].prev_on_fd) = w.prev_on_fd;
  const std::uint32_t i = w.poll_index;
  const std::uint32_t last = static_cast<std::uint32_t>(pollfds_.size() - 1);
  if (i != last) {
    pollfds_[i] = pollfds_[last];
    poll_slots_[i] = poll_slots_[last];
    watches_[poll_slots_[i]].poll_index = i;
  }
  pollfds_.pop_back();
  poll_slots_.pop_back();
  w.fn = nullptr;
  w.seq = 0;
  w.owner = nullptr;
  w.prev_on_fd = no_slot;
  w.next_on_fd = free_slots_;
  free_slots_ = slot;
  --watch_count_;
}

std::uint32_t loop::first_ready(int fd, short revents, std::uint64_t last) const noexcept {
  if (fd < 0 || static_cast<std::size_t>(fd) >= by_fd_.size()) return no_slot;
  for (std::uint32_t i = by_fd_[static_cast<std::size_t>(fd)].head; i != no_slot; i = watches_[i].next_on_fd) {
    const watch_entry& w = watches_[i];
    if (w.seq <= last && (revents & (w.events | POLLERR | POLLHUP | POLLNVAL))) return i;
  }
  return no_slot;
}

void loop::cancel(const void* owner) noexcept {
  if (owner == nullptr) return;
  ticks_.cancel(owner);
  microtasks_.cancel(owner);
  immediates_.cancel(owner);
  const auto before = timers_.size();
  std::erase_if(timers_, [owner](const timer_entry& t) { return t.owner == owner; });
  if (timers_.size() != before) std::make_heap(timers_.begin(), timers_.end(), later{});
  if (watch_count_ == 0) return;
  for (std::uint32_t i = 0; i < watches_.size(); ++i) {
    watch_entry& w = watches_[i];
    if (w.seq == 0 || w.owner != owner) continue;
    const std::size_t fd = static_cast<std::size_t>(w.fd);
    remove_watch(i);
    // The owner may close its fds next: the driver lets go of those that
    // no other watch waits on.
    if (driver_ && by_fd_[fd].head == no_slot) driver_->unwatch(static_cast<int>(fd));
  }
}

void loop::forget_fd(int fd) noexcept {
  if (!driver_ || fd < 0 || static_cast<std::size_t>(fd) >= by_fd_.size()) return;
  if (by_fd_[static_cast<std::size_t>(fd)].head == no_slot) driver_->unwatch(fd);
}

bool loop::alive() const noexcept {
  return !ticks_.empty() || !microtasks_.empty() || !immediates_.empty() || referenced_waits() || holds_ > 0;
}

void loop::unref(const void* owner) {
  if (owner && has_ref(owner)) unrefd_.push_back(owner);
}

void loop::ref(const void* owner) noexcept { std::erase(unrefd_, owner); }

bool loop::has_ref(const void* owner) const noexcept {
  return std::find(unrefd_.begin(), unrefd_.end(), owner) == unrefd_.end();
}

bool loop::referenced_waits() const noexcept {
  if (unrefd_.empty()) [[likely]]
    return watch_count_ != 0 || !timers_.empty();
  for (const auto& w : watches_)
    if (w.seq != 0 && has_ref(w.owner)) return true;
  for (const auto& t : timers_)
    if (t.fn && has_ref(t.owner)) return true;
  return false;
}

void loop::run_microtasks() {
  while (!microtasks_.empty()) {
    queued q = microtasks_.pop();
    if (q.fn) q.fn();
  }
}

// Node: processTicksAndRejections(): the ticks, then the microtasks, until
// neither queue has work, or tick_budget of them ran. Differs from Node,
// whose drain has no end: a chain of ticks that never ends (a pipeline whose
// every stage completes at once: Node's would wait for its I/O) would keep
// timers, posts, signals and fds out for ever. What is left runs in the next
// drain, after the loop has looked at them (run() polls without waiting
// while ticks are queued); the ticks keep their order.
void loop::drain_ticks() {
  std::size_t budget = tick_budget;
  // A drain stopped among the microtasks goes on with them, before the
  // ticks they queued, as it would have.
  bool microtasks_first = std::exchange(microtasks_first_, false);
  do {
    if (!microtasks_first) {
      while (!ticks_.empty()) {
        if (budget-- == 0) return;
        queued q = ticks_.pop();
        if (q.fn) q.fn();
      }
    }
    microtasks_first = false;
    while (!microtasks_.empty()) {
      if (budget-- == 0) {
        microtasks_first_ = true;
        return;
      }
      queued q = microtasks_.pop();
      if (q.fn) q.fn();
    }
  } while (!ticks_.empty());
}

void loop::run_until_idle() {
  ++running_;
  for (;;) {
    drain_posted();
    drain_ticks();
    run_timers();
    if (immediates_.empty() && ticks_.empty() && microtasks_.empty()) break;
    run_immediates();
  }
  --running_;
}

// One turn's immediates: those queued before it, each followed by the ticks
// it queued, as Node runs setImmediate callbacks. Immediates queued during
// the turn wait for the next one.
void loop::run_immediates() {
  for (std::size_t n = immediates_.size(); n > 0 && !immediates_.empty(); --n) {
    queued q = immediates_.pop();
    if (q.fn) q.fn();
    drain_ticks();
  }
}

// A driver reports an fd once for all its watches (poll() lists each watch):
// runs every watch that revents satisfies, but none that these calls add.
void loop::dispatch(int fd, short revents) {
  const std::uint64_t last = watch_seq_;
  for (;;) {
    const std::uint32_t slot = first_ready(fd, revents, last);
    if (slot == no_slot) return;
    fd_task fn = std::move(watches_[slot].fn);
    remove_watch(slot);
    if (fn) fn(revents);
  }
}

bool loop::poll_watches(int timeout_ms) {
  const bool wake = wake_fd_ >= 0;
  // The capacity for it was reserved by watch(), or this allocates once.
  if (wake) pollfds_.push_back({wake_fd_, POLLIN, 0});
  int n;
  do {
    n = ::poll(pollfds_.data(), pollfds_.size(), timeout_ms);
  } while (n < 0 && errno == EINTR);
  if (wake) pollfds_.pop_back();  // drain_posted() reads it
  if (n < 0) throw std::system_error(errno, std::system_category(), "poll");
  if (n == 0) return false;
  // Each ready pollfd names its watch's slot. The callbacks change
  // pollfds_ (and may run a nested loop), so the ready ones are taken out
  // first, each with the watch it was for: a watch removed meanwhile (its
  // fd perhaps closed and the number reused by a new watch in the same
  // slot) has another seq and is skipped, as is any watch added since.
  std::vector<ready_watch> ready = std::move(ready_);
  ready.clear();
  for (std::size_t i = 0; i < pollfds_.size(); ++i)
    if (const short revents = pollfds_[i].revents) {
      pollfds_[i].revents = 0;
      ready.push_back({watches_[poll_slots_[i]].seq, poll_slots_[i], revents});
    }
  // In the order they were watched, as before the pollfds were kept between
  // polls (a removal reorders them).
  std::sort(ready.begin(), ready.end(), [](const ready_watch& a, const ready_watch& b) { return a.seq < b.seq; });
  for (const ready_watch& r : ready) {
    watch_entry& w = watches_[r.slot];
    if (w.seq != r.seq) continue;
    fd_task fn = std::move(w.fn);
    remove_watch(r.slot);
    if (fn) fn(r.revents);
  }
  ready_ = std::move(ready);
  return true;
}

// A turn in libuv's order: timers, then the fds that are ready (without
// waiting while immediates are queued), then one turn of immediates. Every
// turn polls, so a readable that always has data (an immediate per chunk)
// cannot starve fd watches, signals (their eventfd is a watch) or posts.
void loop::run() {
  if (driver_) {
    driver_->run(*this);
    return;
  }
  ++running_;
  while (run_turn_polling(-1)) {
  }
  --running_;
}

bool loop::run_once(std::chrono::milliseconds max_wait) {
  ++running_;
  const bool alive = run_turn_polling(static_cast<int>(std::max<std::chrono::milliseconds::rep>(0, max_wait.count())));
  --running_;
  return alive;
}

// One turn of run(), its poll waiting at most `max_wait_ms` (-1: as long as
// the next timer lets it). False, before it polls, when nothing is left to
// wait for.
bool loop::run_turn_polling(int max_wait_ms) {
  drain_posted();
  drain_ticks();
  run_timers();
  // Ticks left by a drain that reached tick_budget count as work too.
  const bool busy = !immediates_.empty() || !ticks_.empty() || !microtasks_.empty();
  if (!busy && holds_ == 0 && !referenced_waits()) return false;
  if (busy) {
    if (watch_count_ != 0 || wake_fd_.load(std::memory_order_relaxed) >= 0) poll_watches(0);
  } else {
    // A post() from another thread must be able to wake this wait: the
    // eventfd is in the poll set from the first wait on (a post that
    // came first has made it already, and poll() finds it readable).
    // Out of fds, the loop waits without it, as it did before: a
    // program that never posts must not fail for it (the first post
    // then makes it, or throws, and waits for the next wake-up).
    if (wake_fd_.load(std::memory_order_relaxed) < 0) {
      std::lock_guard lock(posted_mutex_);
      try {
        make_wake_fd();
      } catch (const std::exception&) {
      }
    }
    const int timeout = next_timeout_ms();
    poll_watches(max_wait_ms < 0 ? timeout : timeout < 0 ? max_wait_ms : std::min(timeout, max_wait_ms));
  }
  drain_posted();
  drain_ticks();
  run_immediates();
  return true;
}

}  // namespace sluice
