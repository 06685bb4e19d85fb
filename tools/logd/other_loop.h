// sluice-logd --threads N: one of the N-1 loops beside the main one, as the
// main loop sees it. The loop itself, and the logd on it, live on its
// thread; what the main loop keeps of it is this: its counts (read by
// --stats and --metrics), its exit status, and a way to tell it to stop.
#pragma once

#include <functional>
#include <mutex>
#include <utility>

#include "logd/loop_counts.h"
#include "sluice/loop/loop.h"

namespace sluice_tools {

class other_loop {
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

  // On its thread, before it runs: false when the stop was asked already
  // (nothing to run then).
  bool begin(sluice::loop& l, std::function<void()> stop) {
    std::lock_guard lock(m_);
    if (stop_asked_) return false;
    loop_ = &l;
    stop_ = std::move(stop);
    return true;
  }

  // On its thread, once its loop has returned: no more posts to it.
  void end() {
    std::lock_guard lock(m_);
    loop_ = nullptr;
  }

 private:
  std::mutex m_;
  sluice::loop* loop_ = nullptr;
  std::function<void()> stop_;
  bool stop_asked_ = false;
};

}  // namespace sluice_tools
