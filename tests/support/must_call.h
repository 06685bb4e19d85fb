// must_call(n): a callback that must be called exactly n times before the
// end of the test. The check runs in the destructor (or in check()), so
// declare a must_call before the stream whose callbacks it counts: the
// stream's destructor then runs first and may still pay callbacks it owes.
#pragma once

#include "support/printers.h"

#include <cstddef>
#include <functional>
#include <memory>
#include <system_error>
#include <utility>
#include <vector>

#include "sluice/queue/write_req.h"

namespace sluice::test {

class must_call {
 public:
  explicit must_call(int expected = 1, const char* file = __builtin_FILE(), int line = __builtin_LINE())
      : state_(std::make_shared<state>()), expected_(expected), file_(file), line_(line) {}
  must_call(const must_call&) = delete;
  must_call& operator=(const must_call&) = delete;
  ~must_call() { check(); }

  /// A write_cb that counts its calls and keeps the errors it receives.
  write_cb cb() {
    return [s = state_](std::error_code ec) {
      if (s->checked) FAIL_CHECK("a must_call callback was called after its check");
      ++s->calls;
      s->errors.push_back(ec);
      if (s->then) s->then(ec);
    };
  }
  /// Like cb(), and also runs `then(ec)` on each call.
  write_cb cb(std::function<void(std::error_code)> then) {
    state_->then = std::move(then);
    return cb();
  }

  int calls() const noexcept { return state_->calls; }
  /// The error of call i (0-based); CHECK-fails and returns {} if there was none.
  std::error_code error(std::size_t i = 0) const {
    if (i >= state_->errors.size()) {
      FAIL_CHECK("must_call: asked for the error of a call that did not happen");
      return {};
    }
    return state_->errors[i];
  }

  /// Checks the count now; the destructor then checks nothing more.
  void check() {
    if (state_->checked) return;
    state_->checked = true;
    if (state_->calls != expected_) {
      ADD_FAIL_CHECK_AT(file_, line_,
                        "callback made here was called " << state_->calls << " times, expected " << expected_);
    }
  }

 private:
  struct state {
    int calls = 0;
    bool checked = false;
    std::vector<std::error_code> errors;
    std::function<void(std::error_code)> then;
  };
  std::shared_ptr<state> state_;
  int expected_;
  const char* file_;
  int line_;
};

}  // namespace sluice::test
