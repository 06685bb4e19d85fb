// sluice-logd --threads N: one of the N-1 loops beside the main one, as the
// main loop sees it. The loop itself, and the logd on it, live on its
// thread; what the main loop keeps of it is this: its counts (read by
// --stats and --metrics), its exit status, a way to tell it to stop, and
// one to hand it a connection the main loop accepted.
#pragma once

#include <unistd.h>

#include <cstddef>
#include <functional>
#include <mutex>
#include <utility>

#include "logd/loop_counts.h"
#include "stat_table.h"
#include "sluice/loop/loop.h"

namespace sluice_tools {

class other_loop {
  // An fd in a task: closed if the task is dropped unrun.
  struct owned_fd {
    int fd;
    explicit owned_fd(int f) noexcept : fd(f) {}
    owned_fd(owned_fd&& o) noexcept : fd(std::exchange(o.fd, -1)) {}
    owned_fd& operator=(owned_fd&&) = delete;
    ~owned_fd() {
      if (fd >= 0) ::close(fd);
    }
    int release() noexcept { return std::exchange(fd, -1); }
  };

 public:
  loop_counts counts;
  int status = 0;  // written by its thread before it ends, read once joined

  // The main loop stops (SIGTERM, a failure): the stop runs on this loop's
  // thread, now if it runs, else as soon as it begins. The mutex keeps the
  // post from reaching a loop whose thread has ended.
  void ask_stop() {
    std::lock_guard lock(m_);
    if (stop_asked_) return;
    stop_asked_ = true;
    if (loop_) loop_->post([this] { stop_(); });
  }

  // The main loop's acceptor hands this loop a connection (of a unix: or
  // fd:NAME listener, or --listen-tls): adopted on this loop's thread by
  // its listener `index`. False when the loop does not run (not begun yet,
  // asked to stop, ended): the fd is still the caller's then.
  bool hand(std::size_t index, int fd) {
    std::lock_guard lock(m_);
    if (!loop_ || stop_asked_) return false;
    // A post that comes after the loop's last turn is never run: the fd
    // is closed with the task, when the loop goes.
    loop_->post([this, index, c = owned_fd{fd}]() mutable { adopt_(index, c.release()); });
    return true;
  }

  // On its thread, before it runs: false when the stop was asked already
  // (nothing to run then).
  bool begin(sluice::loop& l, std::function<void()> stop, std::function<void(std::size_t, int)> adopt) {
    std::lock_guard lock(m_);
    if (stop_asked_) return false;
    loop_ = &l;
    stop_ = std::move(stop);
    adopt_ = std::move(adopt);
    return true;
  }

  // A relay's next-hop counts on this loop (forwarded, resent, ...): the
  // snapshot its thread last published, which --stats and --metrics add.
  void publish_relay_stats(stat_table t) {
    std::lock_guard lock(m_);
    relay_stats_ = std::move(t);
  }
  stat_table relay_stats() const {
    std::lock_guard lock(m_);
    return relay_stats_;
  }

  // On its thread, once its loop has returned: no more posts to it.
  void end() {
    std::lock_guard lock(m_);
    loop_ = nullptr;
  }

 private:
  mutable std::mutex m_;
  sluice::loop* loop_ = nullptr;
  std::function<void()> stop_;
  std::function<void(std::size_t, int)> adopt_;
  bool stop_asked_ = false;
  stat_table relay_stats_;
};

}  // namespace sluice_tools
