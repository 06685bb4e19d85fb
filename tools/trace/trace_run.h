// trace_run: the streams a scenario drives and the trace they print. It
// builds each stream over a recorded sink, source or transformer
// (SCENARIOS.md, EXTENSIONS.md), names it, and turns its events, sink calls
// and state into trace lines.
#pragma once

#include <deque>
#include <functional>
#include <map>
#include <stop_token>
#include <memory>
#include <optional>
#include <string>
#include <system_error>
#include <vector>

#include "sluice/sluice.h"

namespace sluice_trace {

/// "ok" or the error's ERR_* name, as the trace prints an outcome.
std::string what(const std::error_code& ec);

/// What a scenario's name stands for. A duplex (duplex, transform,
/// passthrough) is both a writable and a readable.
enum class stream_kind { writable, readable, duplex };
enum class duplex_kind { duplex, transform, passthrough };

/// The options of a creating command (`writable w hwm=4 sync`, ...).
struct stream_options {
  std::optional<std::size_t> hwm;
  bool writev = false, final = false, sync = false, object_mode = false;
  bool no_auto_destroy = false, no_emit_close = false;
  // Extension (EXTENSIONS.md): duplex and transform options.
  bool no_half_open = false, no_readable = false, no_writable = false;
  bool flush = false, async = false;
  // Extension (API.md): a sink with a _destroy(err, cb) that waits.
  bool destroy = false;
};

/// Extension (API.md): `from R CHUNKS [OPTION]...`, Readable.from().
struct from_spec {
  std::vector<std::string> chunks;
  std::optional<std::size_t> hwm;
  bool bytes = false, range = false, string = false;
  bool async = false;  // an async iterator: each pull waits for `settle`
  bool no_auto_destroy = false, no_emit_close = false;
  std::optional<std::string> error;  // the generator's throw after its items
};

/// One pending sink call of a scenario's writable: _write, _writev and
/// _final share one FIFO, completed by `complete`. A transform's pending
/// _transform and _flush share one too.
using pending_call = std::function<void(std::error_code)>;

struct stream_entry {
  std::unique_ptr<sluice::writable> w;
  std::unique_ptr<sluice::readable> r;
  // A shared_ptr for the deleter it keeps: duplex's destructor is not
  // virtual, so a transform (or pass_through) deleted through a
  // unique_ptr<duplex> skipped its own destructor (found by
  // tests/fuzz/scenario_run_fuzz: a wild jump when the run was deleted).
  std::shared_ptr<sluice::duplex> d;
  std::deque<pending_call> pending;
  bool async_from = false;  // an async `from`: `pending` holds its pulls

  sluice::writable& writable() { return w ? *w : *d; }
  sluice::readable& readable() { return r ? *r : *d; }
  sluice::stream_ref ref();
};

class trace_run {
 public:
  void emit(std::string line) { trace_.push_back(std::move(line)); }
  const std::vector<std::string>& lines() const noexcept { return trace_; }

  /// The stream a scenario calls `name`. Throws missing_stream for a name
  /// whose stream was never made (its compose threw).
  stream_entry& operator[](const std::string& name) {
    stream_entry& e = streams_[name];
    if (!e.w && !e.r && !e.d) throw missing_stream{name};
    return e;
  }
  struct missing_stream {
    std::string name;
  };
  /// The abort-controller a scenario calls `name` (Node's AbortController).
  std::stop_source& controller(const std::string& name) { return controllers_[name]; }

  void add_writable(const std::string& name, const stream_options& o);
  void add_readable(const std::string& name, const stream_options& o);
  void add_duplex(const std::string& name, duplex_kind k, const stream_options& o);
  void add_from(const std::string& name, const from_spec& f);
  /// A readable made by a helper (map, filter, take, drop), named `name`.
  void add_made_readable(const std::string& name, std::unique_ptr<sluice::readable> r);
  /// A duplex made by compose(), named `name`.
  void add_made_duplex(const std::string& name, std::unique_ptr<sluice::duplex> d);
  void add_duplex_pair(const std::string& a, const std::string& b, const stream_options& o);

  /// `state NAME`: one line for a writable or a readable; a duplex's
  /// writable side, then its readable side.
  void state(const std::string& name, stream_kind k);

  /// Destroys every stream (without an error), as a program does before
  /// deleting its streams.
  void destroy_all();

 private:
  // Declared first so that it outlives the streams: their destructors may
  // still print.
  std::vector<std::string> trace_;
  std::map<std::string, std::stop_source> controllers_;
  std::map<std::string, stream_entry> streams_;  // a node never moves: sinks hold `pending`
};

}  // namespace sluice_trace
