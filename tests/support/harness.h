// harness: a writable over a recording_sink on a private loop, with its
// events, write callbacks and end callbacks logged into one trace:
//
//   "_write a; cb a ok; _final; end-cb ok; finish; close"
//
// Every callback made with cb() or end_cb() must be called exactly once;
// the harness checks it after destroying the stream (whose destructor may
// still pay owed callbacks).
#pragma once

#include <deque>
#include <memory>
#include <string>
#include <string_view>

#include "sluice/loop/loop.h"
#include "sluice/stream/writable.h"
#include "support/must_call.h"
#include "support/recording_sink.h"

namespace sluice::test {

struct harness_options {
  recording_sink_options sink;
  writable_options stream;
  bool log_prefinish = false;
};

class harness {
 public:
  explicit harness(harness_options o = {}) {
    auto s = std::make_unique<recording_sink>(log, o.sink);
    sink = s.get();
    o.stream.event_loop = &loop;
    w = std::make_unique<writable>(std::move(s), o.stream);
    w->on(event::drain, [this] { log.add("drain"); });
    w->on(event::finish, [this] { log.add("finish"); });
    w->on(event::close, [this] { log.add("close"); });
    w->on(event::error, [this](std::error_code ec) { log.add("error " + show(ec)); });
    if (o.log_prefinish) w->on(event::prefinish, [this] { log.add("prefinish"); });
  }
  harness(const harness&) = delete;
  harness& operator=(const harness&) = delete;
  ~harness() {
    w.reset();  // pays what it still owes before the must_calls check
    calls_.clear();
  }

  /// A write callback that logs "cb <name> ok" or "cb <name> <ERR>"; it
  /// must be called exactly once.
  write_cb cb(const std::string& name, const char* file = __builtin_FILE(), int line = __builtin_LINE()) {
    auto& m = calls_.emplace_back(1, file, line);
    return m.cb([this, name](std::error_code ec) { log.add("cb " + name + " " + show(ec)); });
  }
  /// An end callback that logs "end-cb ok" or "end-cb <ERR>"; called exactly once.
  write_cb end_cb(const char* file = __builtin_FILE(), int line = __builtin_LINE()) {
    auto& m = calls_.emplace_back(1, file, line);
    return m.cb([this](std::error_code ec) { log.add("end-cb " + show(ec)); });
  }

  /// write(chunk, cb) logged as the conformance traces print it:
  /// "write <chunk> -> true|false" after whatever the call itself logged.
  /// With `with_cb`, the callback logs "cb <chunk> ok|<ERR>".
  bool write(std::string_view chunk, bool with_cb = true, const char* file = __builtin_FILE(),
             int line = __builtin_LINE()) {
    const bool r = with_cb ? w->write(chunk, cb(show(chunk), file, line)) : w->write(chunk);
    log.add("write " + show(chunk) + " -> " + (r ? "true" : "false"));
    return r;
  }
  /// end(cb) / end(cb-less); the callback logs "end-cb ok|<ERR>".
  void end(bool with_cb = true, const char* file = __builtin_FILE(), int line = __builtin_LINE()) {
    if (with_cb)
      w->end(end_cb(file, line));
    else
      w->end();
  }
  /// end(chunk, cb): a separate name, since a string literal would convert
  /// to end()'s bool sooner than to a string_view.
  void end_with(std::string_view chunk, bool with_cb = true, const char* file = __builtin_FILE(),
                int line = __builtin_LINE()) {
    if (with_cb)
      w->end(chunk, end_cb(file, line));
    else
      w->end(chunk);
  }
  /// Logs "state <state()>".
  void log_state() { log.add("state " + state()); }

  /// Runs every tick and immediate queued.
  void run() { loop.run_until_idle(); }
  /// Completes the oldest sink call.
  void complete(std::error_code ec = {}) { sink->complete(ec); }

  /// Node's public state, as the conformance traces print it.
  std::string state() const {
    auto b = [](bool v) { return v ? "true" : "false"; };
    return "length=" + std::to_string(w->writable_length()) + " needDrain=" + b(w->writable_need_drain()) +
           " ended=" + b(w->writable_ended()) + " finished=" + b(w->writable_finished()) +
           " corked=" + std::to_string(w->writable_corked()) + " destroyed=" + b(w->destroyed()) +
           " writable=" + b(w->is_writable());
  }

  trace log;
  sluice::loop loop;
  recording_sink* sink = nullptr;

 private:
  std::deque<must_call> calls_;  // before w: destroyed after it

 public:
  std::unique_ptr<writable> w;
};

/// Shorthands for harness options.
inline harness_options async_sink(bool writev = true, bool final = true) {
  harness_options o;
  o.sink.writev = writev;
  o.sink.final = final;
  return o;
}
inline harness_options sync_sink(bool writev = true, bool final = true) {
  harness_options o = async_sink(writev, final);
  o.sink.sync = true;
  return o;
}

}  // namespace sluice::test
