#include "sluice/loop/signals.h"

#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdint>
#include <new>
#include <string>
#include <utility>

namespace sluice {

namespace {

// The handler may only touch lock-free atomics: slots_[signo] holds the
// eventfd of the watch plus one (zero: none), so that the array needs no
// run-time initialisation.
static_assert(std::atomic<int>::is_always_lock_free);
std::atomic<int> slots_[NSIG];
// Handlers running right now, in any thread: teardown waits for them to
// leave before it closes the eventfd they may be about to write to.
std::atomic<int> in_handler_{0};

extern "C" void write_to_slot(int signo) {
  const int saved = errno;
  in_handler_.fetch_add(1);
  const int slot = slots_[signo].load();
  if (slot > 0) {
    const std::uint64_t one = 1;
    // EAGAIN (the counter is full) only means the loop has yet to look.
    [[maybe_unused]] const ssize_t n = ::write(slot - 1, &one, sizeof one);
  }
  in_handler_.fetch_sub(1);
  errno = saved;
}

}  // namespace

namespace detail {

struct signal_state {
  loop* l;
  int signo;
  int fd;
  struct sigaction old {};
  task fn;
  bool* alive = nullptr;  // set while fn runs, so that fn may reset the watch

  void arm() { l->watch(fd, POLLIN, [this](short) { fire(); }, this); }

  void fire() {
    std::uint64_t count;
    [[maybe_unused]] const ssize_t n = ::read(fd, &count, sizeof count);
    bool still = true;
    alive = &still;
    // Called from a local, so that fn may destroy this state (and itself
    // with it) by resetting the watch.
    task local = std::move(fn);
    local();
    if (!still) return;
    alive = nullptr;
    fn = std::move(local);
    arm();
  }

  ~signal_state() {
    ::sigaction(signo, &old, nullptr);
    slots_[signo].store(0);
    while (in_handler_.load() != 0) sched_yield();
    l->cancel(this);
    ::close(fd);
    if (alive) *alive = false;
  }
};

}  // namespace detail

signal_watch::signal_watch() noexcept = default;
signal_watch::signal_watch(signal_watch&& o) noexcept : state_(std::exchange(o.state_, nullptr)) {}
signal_watch& signal_watch::operator=(signal_watch&& o) noexcept {
  if (this != &o) {
    reset();
    state_ = std::exchange(o.state_, nullptr);
  }
  return *this;
}
signal_watch::~signal_watch() { reset(); }

void signal_watch::reset() noexcept { delete std::exchange(state_, nullptr); }

signal_watch on_signal(loop& l, int signo, task t, std::error_code& ec) noexcept {
  ec.clear();
  if (signo <= 0 || signo >= NSIG) {
    ec = std::make_error_code(std::errc::invalid_argument);
    return {};
  }
  const int fd = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (fd < 0) {
    ec = {errno, std::system_category()};
    return {};
  }
  int none = 0;
  if (!slots_[signo].compare_exchange_strong(none, fd + 1)) {
    ::close(fd);
    ec = std::make_error_code(std::errc::device_or_resource_busy);
    return {};
  }
  struct sigaction sa {}, old {};
  sa.sa_handler = write_to_slot;
  sa.sa_flags = SA_RESTART;
  sigemptyset(&sa.sa_mask);
  if (::sigaction(signo, &sa, &old) != 0) {
    ec = {errno, std::system_category()};
    slots_[signo].store(0);
    ::close(fd);
    return {};
  }
  auto* s = new (std::nothrow) detail::signal_state{&l, signo, fd, old, std::move(t)};
  if (!s) {
    ::sigaction(signo, &old, nullptr);
    slots_[signo].store(0);
    ::close(fd);
    ec = std::make_error_code(std::errc::not_enough_memory);
    return {};
  }
  // watch() may allocate; a watch that cannot be armed is no watch.
  try {
    s->arm();
  } catch (...) {
    delete s;
    ec = std::make_error_code(std::errc::not_enough_memory);
    return {};
  }
  return signal_watch(s);
}

signal_watch on_signal(loop& l, int signo, task t) {
  std::error_code ec;
  signal_watch w = on_signal(l, signo, std::move(t), ec);
  if (ec) throw std::system_error(ec, "on_signal(" + std::to_string(signo) + ")");
  return w;
}

}  // namespace sluice
