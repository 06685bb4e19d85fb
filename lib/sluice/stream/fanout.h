// fanout: one input, many subscribers, and a policy for the slow ones. The
// one-to-many server's question that Node and Asio leave to the user: what
// happens when one subscriber stops reading while the others keep up.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "sluice/stream/writable.h"

namespace sluice {

/// What a fanout does with a subscriber that holds too much.
enum class slow_policy {
  /// Everyone waits for the slowest: while a subscriber is over its
  /// high-water mark, the input's writes are not completed, so the input
  /// fills and its write() returns false (pipe() then pauses the source).
  /// It goes on at the subscriber's 'drain' (Node's: its buffer empty), so
  /// it pauses at the high mark and resumes at empty, not at every message.
  pause,
  /// A subscriber whose buffer cannot take a message within max_buffered
  /// skips it: whole messages, never part of one. It is counted, and with a
  /// drop_notice the subscriber is told how many before its next message.
  drop,
  /// A subscriber whose buffer cannot take a message within max_buffered is
  /// destroyed with errc::buffer_full, and counted as cut off.
  disconnect,
};

/// The name a tool prints and parses: "pause", "drop", "disconnect".
const char* to_string(slow_policy p) noexcept;

struct fanout_options {
  slow_policy policy = slow_policy::pause;
  /// drop and disconnect: the most bytes a subscriber may hold unsent,
  /// counting the message that would go in. Whatever the subscribers do,
  /// the fanout never makes one hold more.
  std::size_t max_buffered = 1024 * 1024;
  /// drop: makes the message that tells a subscriber how many messages it
  /// missed, sent before the next one it gets (or before its end, when the
  /// input ends). None: it is not told.
  std::function<std::string(std::uint64_t dropped)> drop_notice{};
  /// end() of the input ends every subscriber, and the input's 'finish'
  /// comes once each has finished or closed.
  bool end_subscribers = true;
  /// The input's options: its high-water mark is how much the producer may
  /// get ahead of the subscribers under pause.
  writable_options input{};
};

/// What happened to one subscriber's share of the messages.
struct subscriber_stats {
  std::uint64_t messages_sent = 0;  // accepted by its write()
  std::uint64_t bytes_sent = 0;
  std::uint64_t messages_dropped = 0;  // drop: skipped; disconnect: lost with it
  bool cut_off = false;  // disconnect: destroyed for holding too much
};

/// Each chunk written to input() is one message, written whole to every
/// subscriber present at that moment. Subscribers are writables the caller
/// owns (sockets, files); each leaves at its 'close' or by remove(), and
/// must not be deleted while it is still a subscriber.
///
///     sluice::fanout hub({.policy = sluice::slow_policy::drop, .max_buffered = 256 * 1024});
///     server.on_connection([&](net::socket& s) { hub.add(s); });
///     lines_in.pipe(hub.input());   // pause under pause, never under drop
///
/// A fanout and its subscribers belong to one loop's thread.
class fanout {
 public:
  explicit fanout(fanout_options options = {});
  ~fanout();
  fanout(const fanout&) = delete;
  fanout& operator=(const fanout&) = delete;

  /// Where messages are written; end() it to end the subscribers.
  writable& input() noexcept { return *input_; }

  /// From the next message on, `subscriber` gets every message. A
  /// subscriber added after the input ended is ended at once (when
  /// end_subscribers is set).
  void add(writable& subscriber);
  /// Stops sending to `subscriber`; it is left as it is. Its stats go to
  /// on_leave first. A no-op for one that is not a subscriber.
  void remove(writable& subscriber) noexcept;
  /// Called when a subscriber leaves (its 'close', or remove()), with what
  /// it got: the place to print per-subscriber stats.
  void on_leave(std::function<void(writable&, const subscriber_stats&)> f) { on_leave_ = std::move(f); }

  std::size_t subscribers() const noexcept { return subs_.size(); }
  /// The stats of a present subscriber, or null.
  const subscriber_stats* stats(const writable& subscriber) const noexcept;

  /// Totals over every subscriber, present or gone.
  std::uint64_t messages_in() const noexcept { return messages_in_; }
  std::uint64_t messages_sent() const noexcept { return totals_.messages_sent; }
  std::uint64_t messages_dropped() const noexcept { return totals_.messages_dropped; }
  std::uint64_t cut_off() const noexcept { return cut_off_; }

 private:
  class hub_sink;
  struct subscriber {
    writable* w;
    subscriber_stats stats;
    std::uint64_t untold = 0;  // drop: dropped since the last notice
    listener_id close_id = 0;
    listener_id finish_id = 0;
    listener_id drain_id = 0;
    bool waited_on = false;  // pause: the input waits for its 'drain'
    bool done = false;       // ending: it finished or closed
  };

  void send(std::string_view message);
  void send_to(subscriber& s, std::string_view message);
  bool waiting() const noexcept { return waits_ != 0; }
  void wait_for_drain(subscriber& s);
  void stop_waiting(subscriber& s) noexcept;
  void leave(subscriber& s) noexcept;
  void end_subscriber(subscriber& s);
  void subscriber_done(subscriber& s) noexcept;
  void settle() noexcept;

  fanout_options options_;
  std::vector<std::unique_ptr<subscriber>> subs_;
  std::unique_ptr<writable> input_;
  hub_sink* sink_ = nullptr;
  std::function<void(writable&, const subscriber_stats&)> on_leave_;
  std::size_t waits_ = 0;       // pause: subscribers whose 'drain' the input waits for
  std::size_t ends_left_ = 0;   // ending: subscribers not yet finished or closed
  bool ending_ = false;
  std::uint64_t messages_in_ = 0;
  std::uint64_t cut_off_ = 0;
  subscriber_stats totals_;
};

}  // namespace sluice
