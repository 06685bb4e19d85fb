// sync_acks: a RELP connection's messages that are written to FILE and wait
// for a sync before they may be answered (sluice-logd --fsync ack, whose
// log_worker syncs behind the writes: log_options::sync_behind).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace sluice_tools {

/// Each message's position is the worker's byte count once its round was
/// written (worker_sink::position()); a message may be answered once
/// log_worker::synced() has reached it, that is once a sync that began
/// after the message was written has returned. Positions come in order
/// (a connection's rounds are written in order), so the messages answered
/// are always the first ones: RELP answers in order.
class sync_acks {
 public:
  /// One more message, written below `position`.
  void add(std::uint64_t position) {
    if (head_ < runs_.size() && runs_.back().position == position)
      ++runs_.back().count;
    else
      runs_.push_back({position, 1});
    ++waiting_;
  }

  /// How many messages, from the first, `synced` covers: they are taken.
  std::size_t take(std::uint64_t synced) noexcept {
    std::size_t n = 0;
    while (head_ < runs_.size() && runs_[head_].position <= synced) n += runs_[head_++].count;
    waiting_ -= n;
    if (head_ == runs_.size()) {
      runs_.clear();  // keeps the capacity: no allocation in steady state
      head_ = 0;
    } else if (head_ >= 64 && head_ * 2 >= runs_.size()) {
      runs_.erase(runs_.begin(), runs_.begin() + static_cast<std::ptrdiff_t>(head_));
      head_ = 0;
    }
    return n;
  }

  bool empty() const noexcept { return waiting_ == 0; }
  std::size_t size() const noexcept { return waiting_; }

 private:
  struct run {
    std::uint64_t position;  // every message of the run was written below it
    std::size_t count;
  };
  std::vector<run> runs_;
  std::size_t head_ = 0;     // the first run not yet taken
  std::size_t waiting_ = 0;  // messages in runs_[head_..]
};

}  // namespace sluice_tools
