// recording_sink: a sink that writes every call it receives to a log
// ("_write a", "_writev a,b", "_final") and completes the calls on demand,
// oldest first, or at once in `sync` mode. The log is shared with whoever
// else records into it (callbacks, events), so one string shows the order.
#pragma once

#include "support/printers.h"

#include <cstddef>
#include <deque>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

#include "sluice/base/errors.h"
#include "sluice/sinks/sink.h"

namespace sluice::test {

/// An ordered log of what happened, printed as "a; b; c".
class trace {
 public:
  void add(std::string line) { lines_.push_back(std::move(line)); }
  /// Everything logged so far, joined with "; ".
  std::string str() const {
    std::string out;
    for (const auto& l : lines_) {
      if (!out.empty()) out += "; ";
      out += l;
    }
    return out;
  }
  /// str(), then forgets it: for checking a scenario step by step.
  std::string take() {
    std::string s = str();
    lines_.clear();
    return s;
  }
  std::size_t size() const noexcept { return lines_.size(); }
  bool empty() const noexcept { return lines_.empty(); }
  const std::vector<std::string>& lines() const noexcept { return lines_; }

 private:
  std::vector<std::string> lines_;
};

/// How a chunk appears in a log: itself when short, else "<N bytes>".
inline std::string show(std::string_view chunk) {
  if (chunk.size() <= 16) return std::string(chunk);
  std::string out = "<";  // built step by step: GCC 12 warns (-Wrestrict) on a + chain here
  out += std::to_string(chunk.size());
  out += " bytes>";
  return out;
}

/// "ok" or the error's code_name().
inline std::string show(std::error_code ec) { return ec ? code_name(ec) : "ok"; }

struct recording_sink_options {
  bool sync = false;    // complete each call inside it
  bool writev = true;   // sink_caps::writev: Node's _writev is defined
  bool final = true;    // sink_caps::final: Node's _final is defined
  bool coalesce = false;  // sink_caps::coalesce
};

class recording_sink : public sink {
 public:
  explicit recording_sink(trace& log, recording_sink_options options = {})
      : sink({.writev = options.writev, .final = options.final, .coalesce = options.coalesce}),
        log_(log),
        options_(options) {}

  void write(std::string_view chunk, write_done done) override {
    log_.add("_write " + show(chunk));
    chunks.push_back(chunk.data());
    bytes.append(chunk);
    ++writes;
    finish(call{false, done, {}});
  }
  void writev(const write_batch& batch, write_done done) override {
    std::string line = "_writev ";
    bool first = true;
    for (std::string_view c : batch) {
      if (!first) line += ',';
      first = false;
      line += show(c);
      chunks.push_back(c.data());
      bytes.append(c);
    }
    log_.add(line);
    ++writevs;
    finish(call{false, done, {}});
  }
  void final(final_done done) override {
    log_.add("_final");
    ++finals;
    finish(call{true, {}, done});
  }
  void destroy(std::error_code err, destroy_done done) noexcept override {
    ++destroys;
    destroy_error = err;
    done(err ? err : destroy_fails_with);
  }

  /// Completes the oldest pending call (write, writev or final), with `ec`.
  void complete(std::error_code ec = {}) {
    REQUIRE_MESSAGE(!pending_.empty(), "recording_sink::complete() with no call pending");
    call c = pending_.front();
    pending_.pop_front();
    last_.emplace(c);
    if (c.is_final)
      c.fin(ec);
    else
      c.write(ec);
  }
  /// Completes every pending call, including those the completions start.
  void complete_all() {
    while (!pending_.empty()) complete();
  }
  std::size_t pending() const noexcept { return pending_.size(); }
  /// Calls the completion of the last completed call a second time: a buggy
  /// sink, for ERR_MULTIPLE_CALLBACK.
  void complete_last_again(std::error_code ec = {}) {
    REQUIRE_MESSAGE(last_.has_value(), "recording_sink: nothing was completed yet");
    if (last_->is_final)
      last_->fin(ec);
    else
      last_->write(ec);
  }

  /// Switches between completing inside the call and on demand.
  void set_sync(bool sync) noexcept { options_.sync = sync; }
  /// In sync mode, the next call completes with `ec`.
  void fail_next(std::error_code ec) noexcept { next_error_ = ec; }

  // What the sink was given, for byte-level checks.
  std::string bytes;                 // every chunk, concatenated
  std::vector<const char*> chunks;   // the address of each chunk as given
  std::size_t writes = 0, writevs = 0, finals = 0, destroys = 0;
  std::error_code destroy_error;       // what the stream passed to destroy()
  std::error_code destroy_fails_with;  // destroy() returns this when given no error

 private:
  struct call {
    bool is_final;
    // write_done and final_done have no public constructor, so keep copies.
    std::optional<write_done> write_opt;
    std::optional<final_done> final_opt;
    call(bool f, std::optional<write_done> w, std::optional<final_done> fi)
        : is_final(f), write_opt(w), final_opt(fi) {}
    void write(std::error_code ec) const { (*write_opt)(ec); }
    void fin(std::error_code ec) const { (*final_opt)(ec); }
  };
  void finish(call c) {
    if (options_.sync) {
      const std::error_code ec = next_error_;
      next_error_.clear();
      last_.emplace(c);
      if (c.is_final)
        c.fin(ec);
      else
        c.write(ec);
    } else {
      pending_.push_back(std::move(c));
    }
  }

  trace& log_;
  recording_sink_options options_;
  std::deque<call> pending_;
  std::optional<call> last_;
  std::error_code next_error_;
};

}  // namespace sluice::test
