// sluice-trace: runs a stream scenario (../shared/conformance/SCENARIOS.md)
// through sluice's streams and prints the trace, which must match the one
// Node prints for the same scenario (oracle.mjs) byte for byte. It also runs
// sluice's extension commands (tests/conformance/ext/EXTENSIONS.md: duplex,
// transform, passthrough, pipeline, finished), whose reference is
// ext/oracle-ext.mjs.
//
//   sluice-trace FILE.scn      or      sluice-trace - < FILE.scn
//
// Exit 0 after a run; 2 when the scenario is malformed or cannot be read.
#include <cstdio>
#include <deque>
#include <algorithm>
#include <fstream>
#include <functional>
#include <iostream>
#include <map>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "sluice/sluice.h"
#include "sluice/stream/finished.h"
#include "sluice/stream/pipeline.h"

namespace {

std::vector<std::string> trace;

void emit(std::string line) { trace.push_back(std::move(line)); }

std::string what(const std::error_code& ec) { return ec ? sluice::code_name(ec) : "ok"; }

struct scenario_error {
  int line;
  std::string message;
};

// One pending sink call of a scenario's writable: _write, _writev and _final
// share one FIFO, completed by `complete`. A transform's pending _transform
// and _flush share one too.
using pending_call = std::function<void(std::error_code)>;

struct writable_opts {
  std::optional<std::size_t> hwm;
  bool writev = false, final = false, sync = false, object_mode = false;
  bool no_auto_destroy = false, no_emit_close = false;
  // Extension (EXTENSIONS.md): duplex and transform options.
  bool no_half_open = false, no_readable = false, no_writable = false;
  bool flush = false, async = false;
};

// The recorded sink of SCENARIOS.md: prints each call, then completes it at
// once (sync) or leaves it pending until `complete`.
class recording_sink final : public sluice::sink {
 public:
  recording_sink(std::string name, const writable_opts& o, std::deque<pending_call>& pending)
      : name_(std::move(name)), opts_(o), pending_(pending) {}

  void write(std::string_view chunk, sluice::write_done done) override {
    emit("_write " + name_ + " " + std::string(chunk));
    settle(done);
  }
  void writev(const sluice::write_batch& batch, sluice::write_done done) override {
    std::string line = "_writev " + name_ + " ";
    bool first = true;
    for (std::string_view c : batch) {
      if (!first) line += ',';
      line.append(c);
      first = false;
    }
    emit(std::move(line));
    settle(done);
  }
  bool has_writev() const noexcept override { return opts_.writev; }
  void final(sluice::final_done done) override {
    emit("_final " + name_);
    settle(done);
  }
  bool has_final() const noexcept override { return opts_.final; }

 private:
  template <class Done>
  void settle(Done done) {
    if (opts_.sync)
      done();
    else
      pending_.push_back([done](std::error_code ec) mutable { done(ec); });
  }
  std::string name_;
  writable_opts opts_;
  std::deque<pending_call>& pending_;
};

// The recorded source of SCENARIOS.md: prints each _read and pushes nothing;
// data only arrives through `push`.
class scenario_source final : public sluice::source {
 public:
  explicit scenario_source(std::string name) : name_(std::move(name)) {}
  void read(std::size_t) override { emit("_read " + name_); }

 private:
  std::string name_;
};

// Extension: the transformer of `transform`: prints each _transform and
// _flush and calls back with the chunk upper-cased (with `FLUSH` for a
// flush), at once or, with `async`, at `complete`.
class scenario_transformer final : public sluice::transformer {
 public:
  scenario_transformer(std::string name, const writable_opts& o, std::deque<pending_call>& pending)
      : name_(std::move(name)), opts_(o), pending_(pending) {}

  void transform(std::string_view chunk, sluice::transform_done done) override {
    emit("_transform " + name_ + " " + std::string(chunk));
    std::string data(chunk);
    for (char& c : data)
      if (c >= 'a' && c <= 'z') c = static_cast<char>(c - 'a' + 'A');
    settle(done, std::move(data));
  }
  void flush(sluice::transform_done done) override {
    emit("_flush " + name_);
    settle(done, "FLUSH");
  }
  bool has_flush() const noexcept override { return opts_.flush; }

 private:
  void settle(sluice::transform_done done, std::string data) {
    auto call = [done, data = std::move(data)](std::error_code ec) mutable {
      if (ec)
        done(ec);
      else
        done(std::move(data));
    };
    if (opts_.async)
      pending_.push_back(std::move(call));
    else
      call({});
  }
  std::string name_;
  writable_opts opts_;
  std::deque<pending_call>& pending_;
};

struct stream_entry {
  // A duplex (duplex, transform, passthrough) is both a writable and a readable.
  enum class kind { writable, readable, duplex } k;
  std::unique_ptr<sluice::writable> w;
  std::unique_ptr<sluice::readable> r;
  std::unique_ptr<sluice::duplex> d;
  std::deque<pending_call> pending;

  sluice::writable& writable() { return w ? *w : *d; }
  sluice::readable& readable() { return r ? *r : *d; }
  sluice::stream_ref ref() {
    if (d) return sluice::stream_ref(*d);
    if (w) return sluice::stream_ref(*w);
    return sluice::stream_ref(*r);
  }
};

using step = std::function<void()>;

struct parsed_step {
  int line;
  bool tick = false;
  step run;
};

std::map<std::string, stream_entry> streams;

// `destroyed` is the stream's: a duplex's is both sides' (Node's Duplex getter).
std::string state_line(const std::string& name, sluice::writable& w, bool destroyed) {
  auto b = [](bool v) { return v ? "true" : "false"; };
  std::ostringstream s;
  s << "state " << name << " length=" << w.writable_length() << " needDrain=" << b(w.writable_need_drain())
    << " ended=" << b(w.writable_ended()) << " finished=" << b(w.writable_finished())
    << " corked=" << w.writable_corked() << " destroyed=" << b(destroyed)
    << " writable=" << b(w.is_writable());
  return s.str();
}

std::string state_line(const std::string& name, sluice::readable& r, bool destroyed) {
  auto b = [](bool v) { return v ? "true" : "false"; };
  const auto flowing = r.readable_flowing();
  std::ostringstream s;
  s << "state " << name << " length=" << r.readable_length()
    << " flowing=" << (flowing ? b(*flowing) : "null") << " ended=" << b(r.ended())
    << " endEmitted=" << b(r.readable_ended()) << " destroyed=" << b(destroyed)
    << " readable=" << b(r.is_readable());
  return s.str();
}

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

std::vector<parsed_step> parse(const std::string& text) {
  std::map<std::string, stream_entry::kind> kinds;
  std::vector<parsed_step> steps;
  std::istringstream in(text);
  std::string raw;
  int n = 0;
  while (std::getline(in, raw)) {
    ++n;
    if (auto hash = raw.find('#'); hash != std::string::npos) raw.erase(hash);
    std::vector<std::string> words;
    {
      std::string w;
      for (char c : raw) {
        if (c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == '\v' || c == '\f') {
          if (!w.empty()) words.push_back(std::move(w)), w.clear();
        } else {
          w += c;
        }
      }
      if (!w.empty()) words.push_back(std::move(w));
    }
    if (words.empty()) continue;
    const std::string cmd = words[0];
    const std::vector<std::string> args(words.begin() + 1, words.end());
    auto fail = [&](const std::string& msg) { throw scenario_error{n, msg}; };
    auto stream = [&](std::size_t k, std::optional<stream_entry::kind> want) {
      if (k >= args.size()) fail(cmd + ": missing stream name");
      const std::string& name = args[k];
      auto it = kinds.find(name);
      if (it == kinds.end()) fail(cmd + ": unknown stream '" + name + "'");
      // Extension: a duplex is a writable and a readable.
      if (want && it->second != *want && it->second != stream_entry::kind::duplex)
        fail(cmd + ": '" + name + "' is not a " +
             (*want == stream_entry::kind::writable ? "writable" : "readable"));
      return name;
    };
    auto chunk = [&](const std::string& w) {
      if (!is_chunk(w)) fail(cmd + ": bad chunk '" + w + "'");
      return w;
    };
    auto arity = [&](std::size_t min, std::size_t max) {
      if (args.size() < min || args.size() > max)
        fail(cmd + ": expected " + (min == max ? std::to_string(min) : std::to_string(min) + "-" + std::to_string(max)) +
             " arguments, got " + std::to_string(args.size()));
    };
    auto error_opt = [&](std::size_t k) -> std::optional<std::string> {
      if (k >= args.size()) return std::nullopt;
      const std::string& w = args[k];
      if (w.rfind("error=", 0) != 0 || w.size() == 6) fail(cmd + ": expected error=MSG, got '" + w + "'");
      return w.substr(6);
    };
    auto create = [&](stream_entry::kind k) {
      if (args.empty()) fail(cmd + ": missing stream name");
      const std::string& name = args[0];
      if (kinds.count(name)) fail(cmd + ": stream '" + name + "' already exists");
      kinds[name] = k;
      return name;
    };
    const auto W = stream_entry::kind::writable;
    const auto R = stream_entry::kind::readable;
    const auto D = stream_entry::kind::duplex;
    parsed_step s{n, false, nullptr};

    if (cmd == "writable" || cmd == "readable" || cmd == "duplex" || cmd == "transform" || cmd == "passthrough") {
      const bool is_w = cmd == "writable";
      const bool is_r = cmd == "readable";
      writable_opts o;
      std::map<std::string, bool> seen;
      for (std::size_t i = 1; i < args.size(); ++i) {
        const std::string& w = args[i];
        const bool is_hwm = w.rfind("hwm=", 0) == 0;
        const std::string key = is_hwm ? "hwm" : w;
        static const std::map<std::string, std::vector<std::string>> allowed_by_cmd = {
            {"writable", {"hwm", "writev", "final", "sync", "objectMode", "noAutoDestroy", "noEmitClose"}},
            {"readable", {"hwm", "objectMode", "noAutoDestroy", "noEmitClose"}},
            {"duplex", {"hwm", "writev", "final", "sync", "objectMode", "noAutoDestroy", "noEmitClose", "noHalfOpen",
                        "noReadable", "noWritable"}},
            {"transform", {"hwm", "flush", "async", "objectMode", "noAutoDestroy", "noEmitClose", "noHalfOpen"}},
            {"passthrough", {"hwm", "objectMode", "noAutoDestroy", "noEmitClose", "noHalfOpen"}},
        };
        const auto& allowed = allowed_by_cmd.at(cmd);
        if (std::find(allowed.begin(), allowed.end(), key) == allowed.end()) fail(cmd + ": unknown option '" + w + "'");
        if (seen[key]) fail(cmd + ": option '" + key + "' given twice");
        seen[key] = true;
        if (is_hwm) {
          const std::string v = w.substr(4);
          if (!is_count(v)) fail(cmd + ": hwm wants a non-negative integer, got '" + v + "'");
          o.hwm = std::stoull(v);
        } else if (key == "writev") o.writev = true;
        else if (key == "final") o.final = true;
        else if (key == "sync") o.sync = true;
        else if (key == "objectMode") o.object_mode = true;
        else if (key == "noAutoDestroy") o.no_auto_destroy = true;
        else if (key == "noEmitClose") o.no_emit_close = true;
        else if (key == "noHalfOpen") o.no_half_open = true;
        else if (key == "noReadable") o.no_readable = true;
        else if (key == "noWritable") o.no_writable = true;
        else if (key == "flush") o.flush = true;
        else if (key == "async") o.async = true;
      }
      const std::string name = create(is_w ? W : is_r ? R : D);
      if (!is_w && !is_r) {
        s.run = [name, o, cmd] {
          stream_entry& e = streams[name];
          e.k = stream_entry::kind::duplex;
          sluice::duplex_options dop;
          dop.high_water_mark = o.hwm;
          dop.object_mode = o.object_mode;
          dop.auto_destroy = !o.no_auto_destroy;
          dop.emit_close = !o.no_emit_close;
          dop.allow_half_open = !o.no_half_open;
          dop.readable = !o.no_readable;
          dop.writable = !o.no_writable;
          if (cmd == "duplex")
            e.d = std::make_unique<sluice::duplex>(std::make_unique<scenario_source>(name),
                                                   std::make_unique<recording_sink>(name, o, e.pending), dop);
          else if (cmd == "transform")
            e.d = std::make_unique<sluice::transform>(std::make_unique<scenario_transformer>(name, o, e.pending), dop);
          else
            e.d = std::make_unique<sluice::pass_through>(dop);
          // One emitter: each event prints once.
          for (auto ev : {sluice::event::drain, sluice::event::finish, sluice::event::end, sluice::event::close,
                          sluice::event::pipe, sluice::event::unpipe, sluice::event::pause, sluice::event::resume}) {
            e.d->on(ev, [name, ev] { emit(std::string(sluice::to_string(ev)) + " " + name); });
          }
          e.d->on(sluice::event::error, [name](std::error_code ec) { emit("error " + name + " " + what(ec)); });
        };
      } else if (!is_w) {
        s.run = [name, o] {
          stream_entry& e = streams[name];
          e.k = stream_entry::kind::readable;
          sluice::readable_options ro;
          ro.high_water_mark = o.hwm;
          ro.object_mode = o.object_mode;
          ro.auto_destroy = !o.no_auto_destroy;
          ro.emit_close = !o.no_emit_close;
          e.r = std::make_unique<sluice::readable>(std::make_unique<scenario_source>(name), ro);
          for (auto ev : {sluice::event::end, sluice::event::close, sluice::event::pause, sluice::event::resume}) {
            e.r->on(ev, [name, ev] { emit(std::string(sluice::to_string(ev)) + " " + name); });
          }
          e.r->on(sluice::event::error, [name](std::error_code ec) { emit("error " + name + " " + what(ec)); });
        };
      } else {
        s.run = [name, o] {
          stream_entry& e = streams[name];
          e.k = stream_entry::kind::writable;
          sluice::writable_options wo;
          wo.high_water_mark = o.hwm;
          wo.object_mode = o.object_mode;
          wo.auto_destroy = !o.no_auto_destroy;
          wo.emit_close = !o.no_emit_close;
          e.w = std::make_unique<sluice::writable>(std::make_unique<recording_sink>(name, o, e.pending), wo);
          for (auto ev : {sluice::event::drain, sluice::event::finish, sluice::event::close, sluice::event::pipe,
                          sluice::event::unpipe}) {
            e.w->on(ev, [name, ev] { emit(std::string(sluice::to_string(ev)) + " " + name); });
          }
          e.w->on(sluice::event::error, [name](std::error_code ec) { emit("error " + name + " " + what(ec)); });
        };
      }
    } else if (cmd == "write") {
      arity(2, 3);
      const std::string w = stream(0, W);
      const std::string c = chunk(args[1]);
      if (args.size() == 3 && args[2] != "cb") fail("write: third argument must be 'cb', got '" + args[2] + "'");
      const bool cb = args.size() == 3;
      s.run = [w, c, cb] {
        auto& st = streams[w].writable();
        bool ret;
        if (cb)
          ret = st.write(c, [w, c](std::error_code ec) { emit("cb " + w + " " + c + " " + what(ec)); });
        else
          ret = st.write(c);
        emit("write " + w + " " + c + " -> " + (ret ? "true" : "false"));
      };
    } else if (cmd == "end") {
      arity(1, 3);
      const std::string w = stream(0, W);
      std::vector<std::string> rest(args.begin() + 1, args.end());
      const bool has_cb = !rest.empty() && rest.back() == "cb";
      if (has_cb) rest.pop_back();
      if (rest.size() > 1) fail("end: expected 'end W [CHUNK] [cb]'");
      std::optional<std::string> c;
      if (!rest.empty()) c = chunk(rest[0]);
      s.run = [w, c, has_cb] {
        auto& st = streams[w].writable();
        sluice::write_cb cb;
        if (has_cb) cb = [w](std::error_code ec) { emit("end-cb " + w + " " + what(ec)); };
        if (c)
          st.end(*c, std::move(cb));
        else
          st.end(std::move(cb));
      };
    } else if (cmd == "cork" || cmd == "uncork") {
      arity(1, 1);
      const std::string w = stream(0, W);
      const bool is_cork = cmd == "cork";
      s.run = [w, is_cork] {
        if (is_cork)
          streams[w].writable().cork();
        else
          streams[w].writable().uncork();
      };
    } else if (cmd == "destroy") {
      arity(1, 2);
      const std::string name = stream(0, std::nullopt);
      const auto msg = error_opt(1);
      const auto k = kinds[name];
      s.run = [name, msg, k] {
        const std::error_code err = msg ? sluice::user_error(*msg) : std::error_code{};
        if (k == stream_entry::kind::duplex)
          streams[name].d->destroy(err);
        else if (k == stream_entry::kind::writable)
          streams[name].w->destroy(err);
        else
          streams[name].r->destroy(err);
      };
    } else if (cmd == "complete") {
      arity(1, 2);
      const std::string w = stream(0, W);
      const auto msg = error_opt(1);
      s.run = [w, msg, n] {
        auto& pending = streams[w].pending;
        if (pending.empty()) throw scenario_error{n, "complete: " + w + " has no pending sink call"};
        pending_call call = std::move(pending.front());
        pending.pop_front();
        const std::error_code ec = msg ? sluice::user_error(*msg) : std::error_code{};
        call(ec);
      };
    } else if (cmd == "push") {
      arity(2, 2);
      const std::string r = stream(0, R);
      const bool eof = args[1] == "EOF";
      const std::string c = eof ? args[1] : chunk(args[1]);
      s.run = [r, c, eof] {
        auto& st = streams[r].readable();
        const bool ret = eof ? st.push_eof() : st.push(c);
        emit("push " + r + " " + c + " -> " + (ret ? "true" : "false"));
      };
    } else if (cmd == "unshift") {
      arity(2, 2);
      const std::string r = stream(0, R);
      const std::string c = chunk(args[1]);
      s.run = [r, c] { streams[r].readable().unshift(c); };
    } else if (cmd == "read") {
      arity(1, 2);
      const std::string r = stream(0, R);
      if (args.size() == 2 && !is_count(args[1])) fail("read: N must be a non-negative integer, got '" + args[1] + "'");
      // A count too large for size_t is far above Node's 1 GiB limit: the
      // same ERR_OUT_OF_RANGE.
      std::optional<std::size_t> size;
      if (args.size() == 2) {
        const std::string& v = args[1];
        size = v.size() > 18 ? std::size_t{1} << 62 : std::stoull(v);
      }
      s.run = [r, size] {
        auto& st = streams[r].readable();
        const std::optional<std::string> v = size ? st.read(*size) : st.read();
        emit("read " + r + " -> " + (v ? *v : "null"));
      };
    } else if (cmd == "on") {
      arity(2, 2);
      const std::string r = stream(0, R);
      if (args[1] != "data" && args[1] != "readable") fail("on: event must be 'data' or 'readable', got '" + args[1] + "'");
      const bool data = args[1] == "data";
      s.run = [r, data] {
        auto& st = streams[r].readable();
        if (data)
          st.on(sluice::event::data, [r](std::string_view c) { emit("data " + r + " " + std::string(c)); });
        else
          st.on(sluice::event::readable, [r] { emit("readable " + r); });
      };
    } else if (cmd == "pause" || cmd == "resume") {
      arity(1, 1);
      const std::string r = stream(0, R);
      const bool is_pause = cmd == "pause";
      s.run = [r, is_pause] {
        if (is_pause)
          streams[r].readable().pause();
        else
          streams[r].readable().resume();
      };
    } else if (cmd == "pipe" || cmd == "unpipe") {
      arity(2, 2);
      const std::string r = stream(0, R);
      const std::string w = stream(1, W);
      const bool is_pipe = cmd == "pipe";
      s.run = [r, w, is_pipe] {
        auto& src = streams[r].readable();
        auto& dest = streams[w].writable();
        if (is_pipe)
          src.pipe(dest);
        else
          src.unpipe(dest);
      };
    } else if (cmd == "state") {
      arity(1, 1);
      const std::string name = stream(0, std::nullopt);
      const auto k = kinds[name];
      s.run = [name, k] {
        stream_entry& e = streams[name];
        if (k == stream_entry::kind::duplex) {
          // Extension: the writable side's line, then the readable side's.
          emit(state_line(name, e.writable(), e.d->destroyed()));
          emit(state_line(name, e.readable(), e.d->destroyed()));
        } else if (k == stream_entry::kind::writable) {
          emit(state_line(name, *e.w, e.w->destroyed()));
        } else {
          emit(state_line(name, *e.r, e.r->destroyed()));
        }
      };
    } else if (cmd == "pipeline") {
      // Extension: pipeline S1 S2 ... [end=false].
      std::vector<std::string> names = args;
      const bool end_false = !names.empty() && names.back() == "end=false";
      if (end_false) names.pop_back();
      if (names.size() < 2) fail("pipeline: expected at least 2 streams");
      for (std::size_t k = 0; k < names.size(); ++k) {
        auto it = kinds.find(names[k]);
        if (it == kinds.end()) fail("pipeline: unknown stream '" + names[k] + "'");
        const auto want = k == 0 ? R : k == names.size() - 1 ? W : D;
        if (it->second != want && it->second != D)
          fail("pipeline: '" + names[k] + "' is not a " +
               std::string(want == R ? "readable" : want == W ? "writable" : "duplex"));
      }
      s.run = [names, end_false] {
        std::vector<sluice::stream_ref> refs;
        for (const auto& name : names) refs.push_back(streams[name].ref());
        sluice::pipeline_options po;
        po.end = !end_false;
        sluice::pipeline(
            refs, [](std::error_code ec) { emit(std::string("pipeline-cb ") + what(ec)); }, po);
      };
    } else if (cmd == "finished") {
      // Extension: finished S [readable=B] [writable=B] [error=B].
      arity(1, 4);
      const std::string name = stream(0, std::nullopt);
      std::map<std::string, bool> opts;
      for (std::size_t i = 1; i < args.size(); ++i) {
        const std::string& w = args[i];
        const auto eq = w.find('=');
        const std::string key = eq == std::string::npos ? "" : w.substr(0, eq);
        const std::string v = eq == std::string::npos ? "" : w.substr(eq + 1);
        if ((key != "readable" && key != "writable" && key != "error") || (v != "true" && v != "false"))
          fail("finished: expected readable=B, writable=B or error=B, got '" + w + "'");
        if (opts.count(key)) fail("finished: option '" + key + "' given twice");
        opts[key] = v == "true";
      }
      s.run = [name, opts] {
        sluice::finished_options fo;
        if (opts.count("readable")) fo.readable = opts.at("readable");
        if (opts.count("writable")) fo.writable = opts.at("writable");
        if (opts.count("error")) fo.error = opts.at("error");
        // The map's key outlives the callback, which holds only a pointer.
        const std::string* label = &streams.find(name)->first;
        sluice::finished(streams[name].ref(), [label](std::error_code ec) { emit("finished " + *label + " " + what(ec)); },
                         fo);
      };
    } else if (cmd == "tick") {
      arity(0, 0);
      s.tick = true;
    } else {
      fail("unknown command '" + cmd + "'");
    }
    steps.push_back(std::move(s));
  }
  return steps;
}

void print_trace() {
  for (const auto& l : trace) std::fputs((l + "\n").c_str(), stdout);
  std::fflush(stdout);
}

const char* usage =
    "usage: sluice-trace [FILE.scn | -]\n"
    "Runs a stream scenario (see SCENARIOS.md) through sluice and prints its trace.\n"
    "Reads standard input when FILE is - or absent.\n"
    "Exit status: 0 after a run, 2 for a malformed or unreadable scenario.\n";

}  // namespace

int main(int argc, char** argv) {
  std::string file;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "-h" || a == "--help") {
      std::fputs(usage, stdout);
      return 0;
    }
    if (!file.empty() || (a.size() > 1 && a[0] == '-')) {
      std::fprintf(stderr, "sluice-trace: unexpected argument '%s'\n%s", a.c_str(), usage);
      return 2;
    }
    file = a;
  }

  std::string text;
  if (file.empty() || file == "-") {
    std::ostringstream ss;
    ss << std::cin.rdbuf();
    text = ss.str();
  } else {
    std::ifstream in(file, std::ios::binary);
    if (!in) {
      std::fprintf(stderr, "sluice-trace: cannot read %s\n", file.c_str());
      return 2;
    }
    std::ostringstream ss;
    ss << in.rdbuf();
    text = ss.str();
  }

  int status = 0;
  try {
    auto steps = parse(text);
    auto& l = sluice::loop::current();
    // Commands between ticks run back to back: one synchronous turn.
    for (auto& s : steps) {
      if (s.tick) {
        l.run_until_idle();
        continue;
      }
      // A command that throws in Node prints `throw WHAT` and the run goes on.
      try {
        s.run();
      } catch (const sluice::stream_error& e) {
        emit("throw " + what(e.code()));
      }
    }
    l.run_until_idle();  // the implicit final tick
  } catch (const scenario_error& e) {
    print_trace();
    std::fprintf(stderr, "sluice-trace: line %d: %s\n", e.line, e.message.c_str());
    status = 2;
  }
  if (status == 0) print_trace();
  std::fflush(stdout);
  // The streams' destructors would call callbacks still owed; the trace is
  // already printed, so leave quietly without running them.
  std::_Exit(status);
}
