// Named streams on one private loop that log what they do as the Node
// programs of pipeline_test.mjs and abort_signal_test.mjs do: a readable
// whose _read only logs, a writable whose _write and _final log and call
// back at once (with `fail`, if given), a PassThrough, and the end, finish,
// close and error events of each.
#pragma once

#include <memory>
#include <string>
#include <system_error>

#include "sluice/base/errors.h"
#include "sluice/loop/loop.h"
#include "sluice/stream/duplex.h"
#include "sluice/stream/finished.h"
#include "sluice/stream/readable.h"
#include "sluice/stream/transform.h"
#include "sluice/stream/writable.h"
#include "support/must_call.h"
#include "support/recording_sink.h"

namespace sluice::test {

inline std::string what(std::error_code ec) { return ec ? code_name(ec) : "ok"; }

struct named_streams {
  trace log;
  sluice::loop loop;

  struct quiet_source : source {
    trace& log;
    std::string name;
    quiet_source(trace& l, std::string n) : log(l), name(std::move(n)) {}
    void read(std::size_t) override { log.add("_read " + name); }
  };
  struct sync_sink : sink {
    trace& log;
    std::string name;
    std::error_code fail;
    sync_sink(trace& l, std::string n, std::error_code f) : sink({.final = true}), log(l), name(std::move(n)), fail(f) {}
    void write(std::string_view chunk, write_done done) override {
      log.add("_write " + name + " " + std::string(chunk));
      done(fail);
    }
    void final(final_done done) override {
      log.add("_final " + name);
      done();
    }
  };

  void watch(emitter& e, const std::string& name) {
    for (auto ev : {event::end, event::finish, event::close})
      e.on(ev, [this, ev, name] { log.add(std::string(to_string(ev)) + " " + name); });
    e.on(event::error, [this, name](std::error_code ec) { log.add("error " + name + " " + what(ec)); });
  }
  std::unique_ptr<readable> make_readable(const std::string& name, bool auto_destroy = true) {
    readable_options o;
    o.event_loop = &loop;
    o.auto_destroy = auto_destroy;
    auto r = std::make_unique<readable>(std::make_unique<quiet_source>(log, name), o);
    watch(*r, name);
    return r;
  }
  std::unique_ptr<writable> make_writable(const std::string& name, std::error_code fail = {}) {
    writable_options o;
    o.event_loop = &loop;
    auto w = std::make_unique<writable>(std::make_unique<sync_sink>(log, name, fail), o);
    watch(*w, name);
    return w;
  }
  std::unique_ptr<pass_through> make_pass_through(const std::string& name) {
    duplex_options o;
    o.event_loop = &loop;
    auto p = std::make_unique<pass_through>(o);
    watch(*p, name);
    return p;
  }
  finished_cb log_as(const std::string& prefix, must_call& m) {
    return [this, prefix, cb = std::make_shared<write_cb>(m.cb())](std::error_code ec) {
      log.add(prefix + " " + what(ec));
      (*cb)(ec);
    };
  }
};

}  // namespace sluice::test
