#include "scenario.h"

#include <algorithm>
#include <charconv>
#include <cstdint>
#include <map>
#include <optional>
#include <utility>

#include "sluice/stream/abort_signal.h"
#include "sluice/stream/compose.h"
#include "sluice/stream/default_high_water_mark.h"
#include "sluice/stream/finished.h"
#include "sluice/stream/operators.h"
#include "sluice/stream/pipeline.h"

namespace sluice_trace {

namespace {

using action = std::function<void(trace_run&)>;

// A scenario line without its comment, split at white space.
std::vector<std::string> split_words(std::string_view raw) {
  if (auto hash = raw.find('#'); hash != std::string_view::npos) raw = raw.substr(0, hash);
  std::vector<std::string> words;
  std::string w;
  for (char c : raw) {
    if (c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == '\v' || c == '\f') {
      if (!w.empty()) words.push_back(std::move(w)), w.clear();
    } else {
      w += c;
    }
  }
  if (!w.empty()) words.push_back(std::move(w));
  return words;
}

// A chunk is printable ASCII without spaces.
bool is_chunk(const std::string& w) {
  if (w.empty()) return false;
  for (unsigned char c : w)
    if (c < 0x21 || c > 0x7e) return false;
  return true;
}

bool is_count(const std::string& w) {
  if (w.empty()) return false;
  for (char c : w)
    if (c < '0' || c > '9') return false;
  return true;
}

// Extension (API.md): the calls in flight of the asynchronous helpers'
// functions, per source readable, oldest first: the chunk and what
// completes the call.
struct operator_call {
  std::string chunk;
  std::function<void(std::error_code)> complete;
};
using operator_calls = std::map<std::string, std::vector<operator_call>>;

// Parses a scenario one line at a time: each command family has its
// function, which checks the line's arguments against the streams created
// so far (kinds_) and returns the action that runs it.
class scenario_parser {
 public:
  std::vector<step> parse(std::string_view text);

 private:
  using family = step (scenario_parser::*)();
  static const std::map<std::string_view, family> commands;

  step create_stream();
  stream_options creating_options() const;
  step from();
  step duplex_pair();
  step consuming_helper();
  step stream_helper();
  // Extension (API.md): the helpers' options and flatMap.
  step operator_helper();
  step reduce_async();
  step settle();
  step set_default_hwm();
  step get_default_hwm();
  step write();
  step end();
  step cork();
  step complete();
  step settle_pull();
  step push();
  step unshift();
  step read();
  step on();
  step pause();
  step pipe();
  step pipeline();
  step compose();
  step destroy();
  step state();
  step finished();
  step abort_controller();
  step abort();
  step add_abort_signal();
  // Names an existing abort-controller.
  std::string signal(const std::string& name) const;
  step tick();

  step at(action a) const { return {line_, false, std::move(a)}; }
  [[noreturn]] void fail(const std::string& msg) const { throw scenario_error{line_, msg}; }
  void arity(std::size_t min, std::size_t max) const;
  // The name of an existing stream, argument k, of kind `want` (a duplex is
  // both kinds) or of any kind.
  std::string stream(std::size_t k, std::optional<stream_kind> want) const;
  std::string chunk(const std::string& w) const;
  // The optional error=MSG of argument k.
  std::optional<std::string> error_opt(std::size_t k) const;
  // Names a new stream (argument 0).
  std::string create(stream_kind k);

  std::map<std::string, stream_kind> kinds_;
  std::vector<std::string> signals_;  // abort-controller names, as declared so far
  // The calls of the asynchronous helpers' functions that `settle` completes.
  std::shared_ptr<operator_calls> calls_ = std::make_shared<operator_calls>();
  int line_ = 0;
  std::string cmd_;
  std::vector<std::string> args_;
};

const std::map<std::string_view, scenario_parser::family> scenario_parser::commands = {
    // Creating streams.
    {"writable", &scenario_parser::create_stream},
    {"readable", &scenario_parser::create_stream},
    {"duplex", &scenario_parser::create_stream},
    {"transform", &scenario_parser::create_stream},
    {"passthrough", &scenario_parser::create_stream},
    // Extension (API.md): Readable.from() and the default high-water mark.
    {"from", &scenario_parser::from},
    {"duplexpair", &scenario_parser::duplex_pair},
    // Extension (API.md): the iterator helpers.
    {"to-array", &scenario_parser::consuming_helper},
    {"for-each", &scenario_parser::consuming_helper},
    {"reduce", &scenario_parser::consuming_helper},
    {"some", &scenario_parser::consuming_helper},
    {"every", &scenario_parser::consuming_helper},
    {"find", &scenario_parser::consuming_helper},
    {"map", &scenario_parser::stream_helper},
    {"filter", &scenario_parser::stream_helper},
    {"take", &scenario_parser::stream_helper},
    {"drop", &scenario_parser::stream_helper},
    {"map-async", &scenario_parser::operator_helper},
    {"filter-async", &scenario_parser::operator_helper},
    {"for-each-async", &scenario_parser::operator_helper},
    {"flat-map", &scenario_parser::operator_helper},
    {"reduce-async", &scenario_parser::reduce_async},
    {"settle", &scenario_parser::settle},
    {"set-default-hwm", &scenario_parser::set_default_hwm},
    {"get-default-hwm", &scenario_parser::get_default_hwm},
    // The writable side.
    {"write", &scenario_parser::write},
    {"end", &scenario_parser::end},
    {"cork", &scenario_parser::cork},
    {"uncork", &scenario_parser::cork},
    {"complete", &scenario_parser::complete},
    // The readable side.
    {"push", &scenario_parser::push},
    {"unshift", &scenario_parser::unshift},
    {"read", &scenario_parser::read},
    {"on", &scenario_parser::on},
    {"pause", &scenario_parser::pause},
    {"resume", &scenario_parser::pause},
    // Between streams.
    {"pipe", &scenario_parser::pipe},
    {"unpipe", &scenario_parser::pipe},
    {"pipeline", &scenario_parser::pipeline},
    // Extension (API.md): compose().
    {"compose", &scenario_parser::compose},
    // Any stream.
    {"destroy", &scenario_parser::destroy},
    {"state", &scenario_parser::state},
    {"finished", &scenario_parser::finished},
    // Extension (API.md): AbortController / AbortSignal.
    {"abort-controller", &scenario_parser::abort_controller},
    {"abort", &scenario_parser::abort},
    {"add-abort-signal", &scenario_parser::add_abort_signal},
    // The loop.
    {"tick", &scenario_parser::tick},
};

std::vector<step> scenario_parser::parse(std::string_view text) {
  std::vector<step> steps;
  line_ = 0;
  while (!text.empty()) {
    const std::size_t nl = text.find('\n');
    const std::string_view raw = text.substr(0, nl);
    text.remove_prefix(nl == std::string_view::npos ? text.size() : nl + 1);
    ++line_;
    std::vector<std::string> words = split_words(raw);
    if (words.empty()) continue;
    cmd_ = std::move(words[0]);
    args_.assign(std::make_move_iterator(words.begin() + 1), std::make_move_iterator(words.end()));
    const auto it = commands.find(cmd_);
    if (it == commands.end()) fail("unknown command '" + cmd_ + "'");
    steps.push_back((this->*it->second)());
  }
  return steps;
}

void scenario_parser::arity(std::size_t min, std::size_t max) const {
  if (args_.size() < min || args_.size() > max)
    fail(cmd_ + ": expected " + (min == max ? std::to_string(min) : std::to_string(min) + "-" + std::to_string(max)) +
         " arguments, got " + std::to_string(args_.size()));
}

std::string scenario_parser::stream(std::size_t k, std::optional<stream_kind> want) const {
  if (k >= args_.size()) fail(cmd_ + ": missing stream name");
  const std::string& name = args_[k];
  auto it = kinds_.find(name);
  if (it == kinds_.end()) fail(cmd_ + ": unknown stream '" + name + "'");
  // Extension: a duplex is a writable and a readable.
  if (want && it->second != *want && it->second != stream_kind::duplex)
    fail(cmd_ + ": '" + name + "' is not a " + (*want == stream_kind::writable ? "writable" : "readable"));
  return name;
}

std::string scenario_parser::chunk(const std::string& w) const {
  if (!is_chunk(w)) fail(cmd_ + ": bad chunk '" + w + "'");
  return w;
}

std::optional<std::string> scenario_parser::error_opt(std::size_t k) const {
  if (k >= args_.size()) return std::nullopt;
  const std::string& w = args_[k];
  if (w.rfind("error=", 0) != 0 || w.size() == 6) fail(cmd_ + ": expected error=MSG, got '" + w + "'");
  return w.substr(6);
}

std::string scenario_parser::create(stream_kind k) {
  if (args_.empty()) fail(cmd_ + ": missing stream name");
  const std::string& name = args_[0];
  if (kinds_.count(name)) fail(cmd_ + ": stream '" + name + "' already exists");
  kinds_[name] = k;
  return name;
}

// ---- Creating streams

// writable|readable|duplex|transform|passthrough NAME [OPTION]...
step scenario_parser::create_stream() {
  const stream_options o = creating_options();
  if (cmd_ == "writable") {
    const std::string name = create(stream_kind::writable);
    return at([name, o](trace_run& r) { r.add_writable(name, o); });
  }
  if (cmd_ == "readable") {
    const std::string name = create(stream_kind::readable);
    return at([name, o](trace_run& r) { r.add_readable(name, o); });
  }
  const duplex_kind k = cmd_ == "duplex"      ? duplex_kind::duplex
                        : cmd_ == "transform" ? duplex_kind::transform
                                              : duplex_kind::passthrough;
  const std::string name = create(stream_kind::duplex);
  return at([name, k, o](trace_run& r) { r.add_duplex(name, k, o); });
}

// The options of a creating command, checked against those it allows.
stream_options scenario_parser::creating_options() const {
  static const std::map<std::string, std::vector<std::string>> allowed_by_cmd = {
      {"writable", {"hwm", "writev", "final", "sync", "objectMode", "noAutoDestroy", "noEmitClose", "destroy"}},
      {"readable", {"hwm", "objectMode", "noAutoDestroy", "noEmitClose"}},
      {"duplex", {"hwm", "writev", "final", "sync", "objectMode", "noAutoDestroy", "noEmitClose", "noHalfOpen",
                  "noReadable", "noWritable", "destroy"}},
      {"transform", {"hwm", "flush", "async", "objectMode", "noAutoDestroy", "noEmitClose", "noHalfOpen"}},
      {"passthrough", {"hwm", "objectMode", "noAutoDestroy", "noEmitClose", "noHalfOpen"}},
      {"duplexpair", {"hwm", "objectMode", "noAutoDestroy", "noEmitClose", "noHalfOpen"}},
  };
  static const std::map<std::string, bool stream_options::*> flags = {
      {"writev", &stream_options::writev},
      {"final", &stream_options::final},
      {"sync", &stream_options::sync},
      {"objectMode", &stream_options::object_mode},
      {"noAutoDestroy", &stream_options::no_auto_destroy},
      {"noEmitClose", &stream_options::no_emit_close},
      {"noHalfOpen", &stream_options::no_half_open},
      {"noReadable", &stream_options::no_readable},
      {"noWritable", &stream_options::no_writable},
      {"flush", &stream_options::flush},
      {"async", &stream_options::async},
      {"destroy", &stream_options::destroy},
  };
  const auto& allowed = allowed_by_cmd.at(cmd_);
  stream_options o;
  std::vector<std::string> seen;
  for (std::size_t i = 1; i < args_.size(); ++i) {
    const std::string& w = args_[i];
    const bool is_hwm = w.rfind("hwm=", 0) == 0;
    const std::string key = is_hwm ? "hwm" : w;
    // A bare `hwm` names no flag (found by tests/fuzz/scenario_parse_fuzz).
    if (std::find(allowed.begin(), allowed.end(), key) == allowed.end() || (!is_hwm && !flags.count(key)))
      fail(cmd_ + ": unknown option '" + w + "'");
    if (std::find(seen.begin(), seen.end(), key) != seen.end()) fail(cmd_ + ": option '" + key + "' given twice");
    seen.push_back(key);
    if (is_hwm) {
      const std::string v = w.substr(4);
      if (!is_count(v)) fail(cmd_ + ": hwm wants a non-negative integer, got '" + v + "'");
      std::size_t hwm = 0;
      if (std::from_chars(v.data(), v.data() + v.size(), hwm).ec != std::errc{})
        fail(cmd_ + ": hwm " + v + " is too large (at most " + std::to_string(SIZE_MAX) + ")");
      o.hwm = hwm;
    } else {
      o.*flags.at(key) = true;
    }
  }
  return o;
}

// Extension: from R CHUNKS [hwm=N] [bytes] [range|string|async] [error=MSG]
// [noAutoDestroy] [noEmitClose]; CHUNKS is `-` (none) or chunks joined by
// commas.
step scenario_parser::from() {
  if (args_.size() < 2) fail("from: expected from R CHUNKS [OPTION]...");
  from_spec f;
  const std::string& list = args_[1];
  if (list != "-") {
    std::size_t start = 0;
    for (;;) {
      const std::size_t comma = list.find(',', start);
      const std::string c = list.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
      if (!is_chunk(c)) fail("from: bad chunk '" + c + "' in '" + list + "'");
      f.chunks.push_back(c);
      if (comma == std::string::npos) break;
      start = comma + 1;
    }
  }
  std::vector<std::string> seen;
  for (std::size_t i = 2; i < args_.size(); ++i) {
    const std::string& w = args_[i];
    const auto eq = w.find('=');
    const std::string key = eq == std::string::npos ? w : w.substr(0, eq);
    const std::string v = eq == std::string::npos ? "" : w.substr(eq + 1);
    const bool valued = key == "hwm" || key == "error";
    if ((valued && (eq == std::string::npos || v.empty())) ||
        (!valued && (eq != std::string::npos || (key != "bytes" && key != "range" && key != "string" && key != "async" &&
                                                  key != "noAutoDestroy" && key != "noEmitClose"))))
      fail("from: unknown option '" + w + "'");
    if (std::find(seen.begin(), seen.end(), key) != seen.end()) fail("from: option '" + key + "' given twice");
    seen.push_back(key);
    if (key == "hwm") {
      std::size_t hwm = 0;
      if (!is_count(v)) fail("from: hwm wants a non-negative integer, got '" + v + "'");
      if (std::from_chars(v.data(), v.data() + v.size(), hwm).ec != std::errc{})
        fail("from: hwm " + v + " is too large (at most " + std::to_string(SIZE_MAX) + ")");
      f.hwm = hwm;
    } else if (key == "error") {
      f.error = v;
    } else if (key == "bytes") {
      f.bytes = true;
    } else if (key == "range") {
      f.range = true;
    } else if (key == "string") {
      f.string = true;
    } else if (key == "async") {
      f.async = true;
    } else if (key == "noAutoDestroy") {
      f.no_auto_destroy = true;
    } else {
      f.no_emit_close = true;
    }
  }
  if (int{f.range} + int{f.string} + int{f.async} > 1) fail("from: range, string and async exclude each other");
  if (f.error && (f.range || f.string)) fail("from: error= needs the generator (no range or string)");
  if (f.string && f.chunks.size() != 1) fail("from: string wants exactly one chunk");
  const std::string name = create(stream_kind::readable);
  return at([name, f](trace_run& r) { r.add_from(name, f); });
}

// Extension: duplexpair A B [hwm=N] [objectMode] [noAutoDestroy]
// [noEmitClose] [noHalfOpen]. The options follow the second name; parsed as
// a creating command's (create_stream) with B taken out.
step scenario_parser::duplex_pair() {
  if (args_.size() < 2) fail("duplexpair: expected duplexpair A B [OPTION]...");
  const std::string b = args_[1];
  args_.erase(args_.begin() + 1);
  const stream_options o = creating_options();
  const std::string a = create(stream_kind::duplex);
  if (kinds_.count(b)) fail("duplexpair: stream '" + b + "' already exists");
  kinds_[b] = stream_kind::duplex;
  return at([a, b, o](trace_run& r) { r.add_duplex_pair(a, b, o); });
}

// Extension: to-array R | for-each R | reduce R [INITIAL] | some R CHUNK |
// every R CHUNK | find R CHUNK. The functions print `test R CHUNK` (some,
// every, find: the chunk matches CHUNK; every's function rejects it) or
// `each R CHUNK`; reduce's joins with '+'; the outcome prints
// `CMD R -> VALUE` or `CMD R WHAT`.
step scenario_parser::consuming_helper() {
  const bool wants_chunk = cmd_ == "some" || cmd_ == "every" || cmd_ == "find";
  if (wants_chunk)
    arity(2, 2);
  else if (cmd_ == "reduce")
    arity(1, 2);
  else
    arity(1, 1);
  const std::string name = stream(0, stream_kind::readable);
  std::optional<std::string> arg;
  if (args_.size() == 2) arg = chunk(args_[1]);
  const std::string cmd = cmd_;
  return at([cmd, name, arg](trace_run& r) {
    auto& s = r[name].readable();
    auto report = [&r, cmd, name](const std::string& v) { r.emit(cmd + " " + name + " -> " + v); };
    auto failed = [&r, cmd, name](std::error_code ec) { r.emit(cmd + " " + name + " " + what(ec)); };
    auto test = [&r, name, arg](std::string_view c) {
      r.emit("test " + name + " " + std::string(c));
      return c == *arg;
    };
    if (cmd == "to-array") {
      sluice::to_array(s, [report, failed](std::error_code ec, std::vector<std::string> all) {
        if (ec) return failed(ec);
        std::string v;
        for (const auto& c : all) v += (v.empty() ? "" : ",") + c;
        report(v.empty() ? "-" : v);
      });
    } else if (cmd == "for-each") {
      sluice::for_each(
          s, [&r, name](std::string_view c) { r.emit("each " + name + " " + std::string(c)); },
          [report, failed](std::error_code ec) { ec ? failed(ec) : report("ok"); });
    } else if (cmd == "reduce") {
      sluice::reduce(
          s, [](std::string acc, std::string_view c) { return acc + "+" + std::string(c); }, arg,
          [report, failed](std::error_code ec, std::string v) { ec ? failed(ec) : report(v); });
    } else if (cmd == "some") {
      sluice::some(s, test, [report, failed](std::error_code ec, bool v) { ec ? failed(ec) : report(v ? "true" : "false"); });
    } else if (cmd == "every") {
      sluice::every(
          s, [test](std::string_view c) { return !test(c); },
          [report, failed](std::error_code ec, bool v) { ec ? failed(ec) : report(v ? "true" : "false"); });
    } else {
      sluice::find(s, test, [report, failed](std::error_code ec, std::optional<std::string> v) {
        ec ? failed(ec) : report(v ? *v : "undefined");
      });
    }
  });
}

// Extension: map M R | filter M R CHUNK | take M R N [signal=C] | drop M R N
// [signal=C]: M is a new readable. map's function prints `map R CHUNK` and
// upper-cases; filter's prints `test R CHUNK` and drops CHUNK.
step scenario_parser::stream_helper() {
  const bool counted = cmd_ == "take" || cmd_ == "drop";
  if (cmd_ == "map")
    arity(2, 2);
  else
    arity(3, counted ? 4 : 3);
  const std::string src = stream(1, stream_kind::readable);
  std::string arg;
  std::size_t count = 0;
  std::optional<std::string> signal_name;
  if (cmd_ == "filter") arg = chunk(args_[2]);
  if (counted) {
    const std::string& v = args_[2];
    if (!is_count(v) || std::from_chars(v.data(), v.data() + v.size(), count).ec != std::errc{})
      fail(cmd_ + ": N must be a non-negative integer, got '" + v + "'");
    if (args_.size() == 4) {
      if (args_[3].rfind("signal=", 0) != 0) fail(cmd_ + ": unknown option '" + args_[3] + "'");
      signal_name = signal(args_[3].substr(7));
    }
  }
  const std::string m = create(stream_kind::readable);
  const std::string cmd = cmd_;
  return at([cmd, m, src, arg, count, signal_name](trace_run& r) {
    auto& s = r[src].readable();
    std::unique_ptr<sluice::readable> out;
    if (cmd == "map") {
      out = sluice::map(s, [&r, src](std::string_view c) {
        r.emit("map " + src + " " + std::string(c));
        std::string u(c);
        for (char& ch : u)
          if (ch >= 'a' && ch <= 'z') ch = static_cast<char>(ch - 'a' + 'A');
        return u;
      });
    } else if (cmd == "filter") {
      out = sluice::filter(s, [&r, src, arg](std::string_view c) {
        r.emit("test " + src + " " + std::string(c));
        return c != arg;
      });
    } else if (signal_name) {
      sluice::operator_options o;
      o.signal = r.controller(*signal_name).get_token();
      out = cmd == "take" ? sluice::take(s, count, o) : sluice::drop(s, count, o);
    } else if (cmd == "take") {
      out = sluice::take(s, count);
    } else {
      out = sluice::drop(s, count);
    }
    r.add_made_readable(m, std::move(out));
  });
}

// Extension (API.md): map-async M R [OPTION]... | filter-async M R CHUNK
// [OPTION]... | for-each-async R [OPTION]... | flat-map M R [OPTION]...,
// with concurrency=N, hwm=N (highWaterMark) and signal=C. The asynchronous
// functions print `map R CHUNK`, `test R CHUNK` or `each R CHUNK` and wait
// for `settle R CHUNK`; flat-map's gives the chunk and it upper-cased.
step scenario_parser::operator_helper() {
  const bool makes = cmd_ != "for-each-async";
  const std::string src = stream(makes ? 1 : 0, stream_kind::readable);
  std::size_t first = makes ? 2 : 1;
  std::string drop;
  if (cmd_ == "filter-async") {
    if (args_.size() < 3) fail("filter-async: expected filter-async M R CHUNK [OPTION]...");
    drop = chunk(args_[2]);
    first = 3;
  }
  // flat-map M R stream: the function gives readable_from({CHUNK, CHUNK upper-cased}).
  const bool stream_form = cmd_ == "flat-map" && args_.size() > first && args_[first] == "stream";
  if (stream_form) ++first;
  std::optional<std::size_t> concurrency, hwm;
  std::optional<std::string> signal_name;
  for (std::size_t i = first; i < args_.size(); ++i) {
    const std::string& w = args_[i];
    const auto eq = w.find('=');
    const std::string key = eq == std::string::npos ? w : w.substr(0, eq);
    const std::string v = eq == std::string::npos ? "" : w.substr(eq + 1);
    if (eq == std::string::npos || v.empty() || (key != "concurrency" && key != "hwm" && key != "signal"))
      fail(cmd_ + ": unknown option '" + w + "'");
    if ((key == "concurrency" && concurrency) || (key == "hwm" && hwm) || (key == "signal" && signal_name))
      fail(cmd_ + ": option '" + key + "' given twice");
    if (key == "signal") {
      signal_name = signal(v);
      continue;
    }
    std::size_t n = 0;
    if (!is_count(v) || std::from_chars(v.data(), v.data() + v.size(), n).ec != std::errc{})
      fail(cmd_ + ": " + key + " wants a non-negative integer, got '" + v + "'");
    (key == "hwm" ? hwm : concurrency) = n;
  }
  const std::string m = makes ? create(stream_kind::readable) : std::string();
  const std::string cmd = cmd_;
  auto calls = calls_;
  return at([cmd, m, src, drop, concurrency, hwm, signal_name, calls, stream_form](trace_run& r) {
    sluice::operator_options o;
    if (concurrency) o.concurrency = *concurrency;
    o.high_water_mark = hwm;
    if (signal_name) o.signal = r.controller(*signal_name).get_token();
    auto& l = sluice::loop::current();
    // The oracle's functions give `pending.then(...)`: the value a
    // microtask after `settle`.
    auto in_flight = [calls, src, &l](std::string_view c, std::function<void(std::error_code)> done) {
      (*calls)[src].push_back({std::string(c), [&l, done = std::move(done)](std::error_code ec) {
                                 l.queue_microtask([done, ec] { done(ec); });
                               }});
    };
    auto upper = [](std::string_view c) {
      std::string u(c);
      for (char& ch : u)
        if (ch >= 'a' && ch <= 'z') ch = static_cast<char>(ch - 'a' + 'A');
      return u;
    };
    auto& s = r[src].readable();
    std::unique_ptr<sluice::readable> out;
    if (cmd == "map-async") {
      out = sluice::map(
          s,
          [&r, src, in_flight, upper](std::string_view c, sluice::map_done done) {
            r.emit("map " + src + " " + std::string(c));
            auto d = std::make_shared<sluice::map_done>(std::move(done));
            in_flight(c, [d, v = upper(c)](std::error_code ec) { (*d)(ec, v); });
          },
          o);
    } else if (cmd == "filter-async") {
      out = sluice::filter(
          s,
          [&r, src, in_flight, drop](std::string_view c, sluice::predicate_done done) {
            r.emit("test " + src + " " + std::string(c));
            auto d = std::make_shared<sluice::predicate_done>(std::move(done));
            in_flight(c, [d, keep = c != drop](std::error_code ec) { (*d)(ec, keep); });
          },
          o);
    } else if (cmd == "flat-map" && stream_form) {
      out = sluice::flat_map(
          s,
          [&r, src, upper](std::string_view c) -> std::unique_ptr<sluice::readable> {
            r.emit("flat-map " + src + " " + std::string(c));
            return sluice::readable_from(std::vector<std::string>{std::string(c), upper(c)});
          },
          o);
    } else if (cmd == "flat-map") {
      out = sluice::flat_map(
          s,
          [&r, src, upper](std::string_view c) {
            r.emit("flat-map " + src + " " + std::string(c));
            return std::vector<std::string>{std::string(c), upper(c)};
          },
          o);
    } else {
      sluice::for_each(
          s,
          [&r, src, in_flight](std::string_view c, sluice::item_done done) {
            r.emit("each " + src + " " + std::string(c));
            auto d = std::make_shared<sluice::item_done>(std::move(done));
            in_flight(c, [d](std::error_code ec) { (*d)(ec); });
          },
          [&r, src](std::error_code ec) { r.emit("for-each " + src + (ec ? " " + what(ec) : " -> ok")); }, o);
      return;
    }
    r.add_made_readable(m, std::move(out));
  });
}

// Extension (API.md): reduce-async R [INITIAL] [signal=C]: reduce(fn,
// INITIAL, { signal }) whose reducer prints `reduce R CHUNK` and waits for
// `settle R CHUNK`, then gives ACC+CHUNK. The outcome prints
// `reduce-async R -> VALUE` or `reduce-async R WHAT`.
step scenario_parser::reduce_async() {
  arity(1, 3);
  const std::string src = stream(0, stream_kind::readable);
  std::optional<std::string> initial, signal_name;
  for (std::size_t i = 1; i < args_.size(); ++i) {
    const std::string& w = args_[i];
    if (w.rfind("signal=", 0) == 0) {
      if (signal_name) fail("reduce-async: option 'signal' given twice");
      signal_name = signal(w.substr(7));
    } else if (initial || signal_name) {
      fail("reduce-async: expected reduce-async R [INITIAL] [signal=C]");
    } else {
      initial = chunk(w);
    }
  }
  // Node's options come after initialValue, whose presence counts.
  if (signal_name && !initial) fail("reduce-async: signal=C needs an INITIAL");
  auto calls = calls_;
  return at([src, initial, signal_name, calls](trace_run& r) {
    sluice::operator_options o;
    if (signal_name) o.signal = r.controller(*signal_name).get_token();
    auto& l = sluice::loop::current();
    sluice::reduce(
        r[src].readable(),
        [&r, &l, src, calls](std::string acc, std::string_view c, sluice::reduce_done done) {
          r.emit("reduce " + src + " " + std::string(c));
          auto d = std::make_shared<sluice::reduce_done>(std::move(done));
          // The oracle's reducer gives `pending.then(...)`: the value a
          // microtask after `settle`.
          (*calls)[src].push_back({std::string(c), [&l, d, v = acc + "+" + std::string(c)](std::error_code ec) {
                                     l.queue_microtask([d, v, ec] { (*d)(ec, v); });
                                   }});
        },
        initial,
        [&r, src](std::error_code ec, std::string v) {
          r.emit("reduce-async " + src + (ec ? " " + what(ec) : " -> " + v));
        },
        o);
  });
}

// Extension (API.md): settle R CHUNK [error=MSG]: the oldest call in flight
// for CHUNK of a helper over R completes (with error=MSG, fails). With R
// alone, the pull of an async `from` (settle_pull()).
step scenario_parser::settle() {
  if (args_.size() == 1) return settle_pull();
  arity(2, 3);
  const std::string src = stream(0, stream_kind::readable);
  const std::string c = args_[1];
  const auto msg = error_opt(2);
  const int n = line_;
  auto calls = calls_;
  return at([src, c, msg, n, calls](trace_run& r) {
    auto& list = (*calls)[src];
    auto it = std::find_if(list.begin(), list.end(), [&c](const operator_call& k) { return k.chunk == c; });
    if (it == list.end()) throw scenario_error{n, "settle: no call in flight for '" + c + "' over " + src};
    auto complete = std::move(it->complete);
    list.erase(it);
    r.emit("settle " + src + " " + c + (msg ? " " + *msg : ""));
    complete(msg ? sluice::user_error(*msg) : std::error_code{});
  });
}

// Extension: set-default-hwm [objectMode] N
step scenario_parser::set_default_hwm() {
  arity(1, 2);
  const bool object_mode = args_.size() == 2;
  if (object_mode && args_[0] != "objectMode")
    fail("set-default-hwm: expected 'objectMode', got '" + args_[0] + "'");
  const std::string& v = args_.back();
  std::size_t n = 0;
  if (!is_count(v)) fail("set-default-hwm: N must be a non-negative integer, got '" + v + "'");
  if (std::from_chars(v.data(), v.data() + v.size(), n).ec != std::errc{})
    fail("set-default-hwm: " + v + " is too large (at most " + std::to_string(SIZE_MAX) + ")");
  return at([object_mode, n](trace_run&) { sluice::set_default_high_water_mark(object_mode, n); });
}

// Extension: get-default-hwm [objectMode]
step scenario_parser::get_default_hwm() {
  arity(0, 1);
  if (args_.size() == 1 && args_[0] != "objectMode")
    fail("get-default-hwm: expected 'objectMode', got '" + args_[0] + "'");
  const bool object_mode = args_.size() == 1;
  return at([object_mode](trace_run& r) {
    r.emit(std::string("get-default-hwm ") + (object_mode ? "objectMode" : "bytes") + " -> " +
           std::to_string(sluice::get_default_high_water_mark(object_mode)));
  });
}

// ---- The writable side

// write W CHUNK [cb]
step scenario_parser::write() {
  arity(2, 3);
  const std::string w = stream(0, stream_kind::writable);
  const std::string c = chunk(args_[1]);
  if (args_.size() == 3 && args_[2] != "cb") fail("write: third argument must be 'cb', got '" + args_[2] + "'");
  const bool cb = args_.size() == 3;
  return at([w, c, cb](trace_run& r) {
    auto& st = r[w].writable();
    bool ret;
    if (cb)
      ret = st.write(c, [&r, w, c](std::error_code ec) { r.emit("cb " + w + " " + c + " " + what(ec)); });
    else
      ret = st.write(c);
    r.emit("write " + w + " " + c + " -> " + (ret ? "true" : "false"));
  });
}

// end W [CHUNK] [cb]
step scenario_parser::end() {
  arity(1, 3);
  const std::string w = stream(0, stream_kind::writable);
  std::vector<std::string> rest(args_.begin() + 1, args_.end());
  const bool has_cb = !rest.empty() && rest.back() == "cb";
  if (has_cb) rest.pop_back();
  if (rest.size() > 1) fail("end: expected 'end W [CHUNK] [cb]'");
  std::optional<std::string> c;
  if (!rest.empty()) c = chunk(rest[0]);
  return at([w, c, has_cb](trace_run& r) {
    auto& st = r[w].writable();
    sluice::write_cb cb;
    if (has_cb) cb = [&r, w](std::error_code ec) { r.emit("end-cb " + w + " " + what(ec)); };
    if (c)
      st.end(*c, std::move(cb));
    else
      st.end(std::move(cb));
  });
}

// cork W, uncork W
step scenario_parser::cork() {
  arity(1, 1);
  const std::string w = stream(0, stream_kind::writable);
  const bool is_cork = cmd_ == "cork";
  return at([w, is_cork](trace_run& r) {
    if (is_cork)
      r[w].writable().cork();
    else
      r[w].writable().uncork();
  });
}

// complete W [error=MSG]: the oldest pending sink call completes.
step scenario_parser::complete() {
  arity(1, 2);
  const std::string w = stream(0, stream_kind::writable);
  const auto msg = error_opt(1);
  const int n = line_;
  return at([w, msg, n](trace_run& r) {
    auto& pending = r[w].pending;
    if (pending.empty()) throw scenario_error{n, "complete: " + w + " has no pending sink call"};
    pending_call call = std::move(pending.front());
    pending.pop_front();
    const std::error_code ec = msg ? sluice::user_error(*msg) : std::error_code{};
    call(ec);
  });
}

// ---- The readable side

// Extension (API.md): settle R: the oldest pull of an async `from` settles
// (settle() hands it over: one command, told apart by its arguments).
step scenario_parser::settle_pull() {
  arity(1, 1);
  const std::string name = stream(0, stream_kind::readable);
  const int n = line_;
  return at([name, n](trace_run& r) {
    stream_entry& e = r[name];
    if (!e.async_from) throw scenario_error{n, "settle: " + name + " is not an async from"};
    if (e.pending.empty()) throw scenario_error{n, "settle: " + name + " has no pending pull"};
    pending_call call = std::move(e.pending.front());
    e.pending.pop_front();
    call({});
  });
}

// push R CHUNK|EOF
step scenario_parser::push() {
  arity(2, 2);
  const std::string name = stream(0, stream_kind::readable);
  const bool eof = args_[1] == "EOF";
  const std::string c = eof ? args_[1] : chunk(args_[1]);
  return at([name, c, eof](trace_run& r) {
    auto& st = r[name].readable();
    const bool ret = eof ? st.push_eof() : st.push(c);
    r.emit("push " + name + " " + c + " -> " + (ret ? "true" : "false"));
  });
}

// unshift R CHUNK
step scenario_parser::unshift() {
  arity(2, 2);
  const std::string name = stream(0, stream_kind::readable);
  const std::string c = chunk(args_[1]);
  return at([name, c](trace_run& r) { r[name].readable().unshift(c); });
}

// read R [N]
step scenario_parser::read() {
  arity(1, 2);
  const std::string name = stream(0, stream_kind::readable);
  if (args_.size() == 2 && !is_count(args_[1]))
    fail("read: N must be a non-negative integer, got '" + args_[1] + "'");
  // A count too large for size_t is far above Node's 1 GiB limit: the
  // same ERR_OUT_OF_RANGE.
  std::optional<std::size_t> size;
  if (args_.size() == 2) {
    const std::string& v = args_[1];
    size = v.size() > 18 ? std::size_t{1} << 62 : std::stoull(v);
  }
  return at([name, size](trace_run& r) {
    auto& st = r[name].readable();
    const std::optional<std::string> v = size ? st.read(*size) : st.read();
    r.emit("read " + name + " -> " + (v ? *v : "null"));
  });
}

// on R data|readable
step scenario_parser::on() {
  arity(2, 2);
  const std::string name = stream(0, stream_kind::readable);
  if (args_[1] != "data" && args_[1] != "readable")
    fail("on: event must be 'data' or 'readable', got '" + args_[1] + "'");
  const bool data = args_[1] == "data";
  return at([name, data](trace_run& r) {
    auto& st = r[name].readable();
    if (data)
      st.on(sluice::event::data, [&r, name](std::string_view c) { r.emit("data " + name + " " + std::string(c)); });
    else
      st.on(sluice::event::readable, [&r, name] { r.emit("readable " + name); });
  });
}

// pause R, resume R
step scenario_parser::pause() {
  arity(1, 1);
  const std::string name = stream(0, stream_kind::readable);
  const bool is_pause = cmd_ == "pause";
  return at([name, is_pause](trace_run& r) {
    if (is_pause)
      r[name].readable().pause();
    else
      r[name].readable().resume();
  });
}

// ---- Between streams

// pipe R W, unpipe R W
step scenario_parser::pipe() {
  arity(2, 2);
  const std::string src = stream(0, stream_kind::readable);
  const std::string dest = stream(1, stream_kind::writable);
  const bool is_pipe = cmd_ == "pipe";
  return at([src, dest, is_pipe](trace_run& r) {
    auto& from = r[src].readable();
    auto& to = r[dest].writable();
    if (is_pipe)
      from.pipe(to);
    else
      from.unpipe(to);
  });
}

std::string scenario_parser::signal(const std::string& name) const {
  if (std::find(signals_.begin(), signals_.end(), name) == signals_.end())
    fail(cmd_ + ": unknown abort-controller '" + name + "'");
  return name;
}

// Extension (API.md): abort-controller C, a std::stop_source.
step scenario_parser::abort_controller() {
  arity(1, 1);
  const std::string c = args_[0];
  if (std::find(signals_.begin(), signals_.end(), c) != signals_.end() || kinds_.count(c))
    fail("abort-controller: '" + c + "' already exists");
  signals_.push_back(c);
  return at([c](trace_run& r) { r.controller(c); });
}

// Extension (API.md): abort C, request_stop() on the loop's thread.
step scenario_parser::abort() {
  arity(1, 1);
  const std::string c = signal(args_[0]);
  return at([c](trace_run& r) { r.controller(c).request_stop(); });
}

// Extension (API.md): add-abort-signal C S.
step scenario_parser::add_abort_signal() {
  arity(2, 2);
  const std::string c = signal(args_[0]);
  const std::string name = stream(1, std::nullopt);
  return at([c, name](trace_run& r) { sluice::add_abort_signal(r.controller(c).get_token(), r[name].ref()); });
}

// Extension: pipeline S1 S2 ... [end=false] [signal=C].
step scenario_parser::pipeline() {
  std::vector<std::string> names = args_;
  std::string signal_name;
  if (!names.empty() && names.back().rfind("signal=", 0) == 0) {
    signal_name = signal(names.back().substr(7));
    names.pop_back();
  }
  const bool end_false = !names.empty() && names.back() == "end=false";
  if (end_false) names.pop_back();
  if (names.size() < 2) fail("pipeline: expected at least 2 streams");
  for (std::size_t k = 0; k < names.size(); ++k) {
    auto it = kinds_.find(names[k]);
    if (it == kinds_.end()) fail("pipeline: unknown stream '" + names[k] + "'");
    const auto want = k == 0 ? stream_kind::readable : k == names.size() - 1 ? stream_kind::writable : stream_kind::duplex;
    if (it->second != want && it->second != stream_kind::duplex)
      fail("pipeline: '" + names[k] + "' is not a " +
           std::string(want == stream_kind::readable ? "readable" : want == stream_kind::writable ? "writable" : "duplex"));
  }
  return at([names, end_false, signal_name](trace_run& r) {
    std::vector<sluice::stream_ref> refs;
    for (const auto& name : names) refs.push_back(r[name].ref());
    sluice::pipeline_options po;
    po.end = !end_false;
    if (!signal_name.empty()) po.signal = r.controller(signal_name).get_token();
    sluice::pipeline(
        refs, [&r](std::error_code ec) { r.emit(std::string("pipeline-cb ") + what(ec)); }, po);
  });
}

// Extension (API.md): compose C [S1 ... SN] [signal=X]. C names the
// composite duplex; the kinds are left to compose() to check, which throws
// as Node's does (a failed compose makes no C).
step scenario_parser::compose() {
  std::vector<std::string> names = args_;
  std::string signal_name;
  if (!names.empty() && names.back().rfind("signal=", 0) == 0) {
    signal_name = signal(names.back().substr(7));
    names.pop_back();
  }
  if (names.empty()) fail("compose: expected compose C [S1 ... SN] [signal=X]");
  names.erase(names.begin());
  for (const auto& name : names)
    if (!kinds_.count(name)) fail("compose: unknown stream '" + name + "'");
  const std::string c = create(stream_kind::duplex);
  return at([c, names, signal_name](trace_run& r) {
    std::vector<sluice::stream_ref> refs;
    for (const auto& name : names) refs.push_back(r[name].ref());
    sluice::compose_options co;
    if (!signal_name.empty()) co.signal = r.controller(signal_name).get_token();
    r.add_made_duplex(c, sluice::compose(refs, co));
  });
}

// ---- Any stream

// destroy S [error=MSG]
step scenario_parser::destroy() {
  arity(1, 2);
  const std::string name = stream(0, std::nullopt);
  const auto msg = error_opt(1);
  const stream_kind k = kinds_.at(name);
  return at([name, msg, k](trace_run& r) {
    const std::error_code err = msg ? sluice::user_error(*msg) : std::error_code{};
    stream_entry& e = r[name];
    switch (k) {
      case stream_kind::duplex: e.d->destroy(err); break;
      case stream_kind::writable: e.w->destroy(err); break;
      case stream_kind::readable: e.r->destroy(err); break;
    }
  });
}

// state S
step scenario_parser::state() {
  arity(1, 1);
  const std::string name = stream(0, std::nullopt);
  const stream_kind k = kinds_.at(name);
  return at([name, k](trace_run& r) { r.state(name, k); });
}

// Extension: finished S [readable=B] [writable=B] [error=B] [signal=C].
step scenario_parser::finished() {
  arity(1, 5);
  const std::string name = stream(0, std::nullopt);
  sluice::finished_options fo;
  std::vector<std::string> seen;
  std::string signal_name;
  for (std::size_t i = 1; i < args_.size(); ++i) {
    const std::string& w = args_[i];
    if (w.rfind("signal=", 0) == 0) {
      if (!signal_name.empty()) fail("finished: option 'signal' given twice");
      signal_name = signal(w.substr(7));
      continue;
    }
    const auto eq = w.find('=');
    const std::string key = eq == std::string::npos ? "" : w.substr(0, eq);
    const std::string v = eq == std::string::npos ? "" : w.substr(eq + 1);
    if ((key != "readable" && key != "writable" && key != "error") || (v != "true" && v != "false"))
      fail("finished: expected readable=B, writable=B or error=B, got '" + w + "'");
    if (std::find(seen.begin(), seen.end(), key) != seen.end()) fail("finished: option '" + key + "' given twice");
    seen.push_back(key);
    const bool b = v == "true";
    if (key == "readable")
      fo.readable = b;
    else if (key == "writable")
      fo.writable = b;
    else
      fo.error = b;
  }
  return at([name, fo, signal_name](trace_run& r) mutable {
    if (!signal_name.empty()) fo.signal = r.controller(signal_name).get_token();
    sluice::finished(r[name].ref(), [&r, name](std::error_code ec) { r.emit("finished " + name + " " + what(ec)); },
                     fo);
  });
}

// ---- The loop

step scenario_parser::tick() {
  arity(0, 0);
  return {line_, true, nullptr};
}

}  // namespace

std::vector<step> parse_scenario(std::string_view text) { return scenario_parser().parse(text); }

void run_scenario(const std::vector<step>& steps, trace_run& run) {
  auto& l = sluice::loop::current();
  // Every run starts from Node v20's defaults, as the oracle's does.
  sluice::set_default_high_water_mark(false, 16384);
  sluice::set_default_high_water_mark(true, 16);
  for (const auto& s : steps) {
    if (s.tick) {
      // The oracle's commands run inside a promise's continuation: their
      // microtasks (the iterator helpers' awaits) come before their ticks.
      l.run_microtasks();
      l.run_until_idle();
      continue;
    }
    try {
      s.run(run);
    } catch (const sluice::stream_error& e) {
      run.emit("throw " + what(e.code()));
    } catch (const trace_run::missing_stream& m) {
      // Extension (API.md): a name whose compose threw names no stream.
      throw scenario_error{s.line, "'" + m.name + "' was never made (its compose threw)"};
    }
  }
  l.run_microtasks();
  l.run_until_idle();  // the implicit final tick
}

}  // namespace sluice_trace
