// recording_source: a source that logs every _read ("_read") and pushes
// nothing unless told to, as the conformance scenarios' source does; and
// readable_harness, a readable over it whose events go to a trace:
//
//   "push a -> true; _read; resume; data a; end; close"
//
// A readable_harness can share the trace and loop of a writable harness,
// so that one log shows a pipe from both ends.
#pragma once

#include "support/printers.h"

#include <cstddef>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>

#include "sluice/loop/loop.h"
#include "sluice/sources/source.h"
#include "sluice/stream/readable.h"
#include "support/recording_sink.h"

namespace sluice::test {

class recording_source : public source {
 public:
  /// Logs "_read", or "_read <name>" when a name is given.
  explicit recording_source(trace& log, std::string name = {}) : log_(log), suffix_(name.empty() ? "" : " " + name) {}

  void read(std::size_t n) override {
    log_.add("_read" + suffix_);
    ++reads;
    last_size = n;
    if (on_read) on_read(stream());
  }
  std::error_code destroy(std::error_code err) noexcept override {
    ++destroys;
    destroy_error = err;
    return err;
  }

  /// Runs inside each _read, with the stream: a synchronous source.
  std::function<void(readable&)> on_read;
  std::size_t reads = 0, destroys = 0;
  std::size_t last_size = 0;  // the size the last _read was given
  std::error_code destroy_error;

 private:
  trace& log_;
  std::string suffix_;
};

class readable_harness {
 public:
  /// A readable with its own trace and loop.
  explicit readable_harness(readable_options o = {}) : readable_harness(o, own_log_, own_loop_) {}
  /// A readable that logs into `log` and runs on `l` (a writable harness's).
  /// With a name, its events and _read log as "<event> <name>", to tell
  /// them from the writable's.
  readable_harness(readable_options o, trace& log, sluice::loop& l, const std::string& name = {})
      : log(log), loop(l) {
    const std::string suffix = name.empty() ? "" : " " + name;
    auto s = std::make_unique<recording_source>(log, name);
    src = s.get();
    o.event_loop = &loop;
    r = std::make_unique<readable>(std::move(s), o);
    for (auto ev : {event::end, event::close, event::pause, event::resume})
      r->on(ev, [this, ev, suffix] { this->log.add(std::string(to_string(ev)) + suffix); });
    r->on(event::error, [this, suffix](std::error_code ec) { this->log.add("error" + suffix + " " + show(ec)); });
  }
  readable_harness(const readable_harness&) = delete;
  readable_harness& operator=(const readable_harness&) = delete;

  /// push(chunk), logged as "push <chunk> -> true|false".
  bool push(std::string_view chunk) {
    const bool ret = r->push(chunk);
    log.add("push " + show(chunk) + " -> " + (ret ? "true" : "false"));
    return ret;
  }
  /// push_eof(), logged as "push EOF -> false".
  bool push_eof() {
    const bool ret = r->push_eof();
    log.add(std::string("push EOF -> ") + (ret ? "true" : "false"));
    return ret;
  }
  /// read() or read(n), logged as "read -> <chunk>|null".
  std::optional<std::string> read(std::optional<std::size_t> n = std::nullopt) {
    auto ret = n ? r->read(*n) : r->read();
    log.add("read -> " + (ret ? show(*ret) : std::string("null")));
    return ret;
  }
  /// A 'data' listener that logs "data <chunk>".
  listener_id on_data() {
    return r->on(event::data, [this](std::string_view c) { log.add("data " + show(c)); });
  }
  /// A 'readable' listener that logs "readable".
  listener_id on_readable() {
    return r->on(event::readable, [this] { log.add("readable"); });
  }
  /// Node's public state, as the conformance traces print it.
  std::string state() const {
    auto b = [](bool v) { return v ? "true" : "false"; };
    const auto flowing = r->readable_flowing();
    return "length=" + std::to_string(r->readable_length()) + " flowing=" + (flowing ? b(*flowing) : "null") +
           " ended=" + b(r->eof_pushed()) + " endEmitted=" + b(r->readable_ended()) +
           " destroyed=" + b(r->destroyed()) + " readable=" + b(r->is_readable());
  }
  /// Logs "state <state()>".
  void log_state() { log.add("state " + state()); }
  void run() { loop.run_until_idle(); }

 private:
  trace own_log_;
  sluice::loop own_loop_;

 public:
  trace& log;
  sluice::loop& loop;
  recording_source* src = nullptr;
  std::unique_ptr<readable> r;
};

}  // namespace sluice::test
