// logger: the backend thread, the slow paths of print() and shutdown. The
// fast path is print() in logger.h; who touches what, and how the threads
// wake each other, is said in detail/state.h. The clocks are
// detail/clock.cc, the crash handler detail/crash_handler.cc, the macros'
// lines (the pattern, JSON) detail/line_format.cc.
#include "sluice/logger/logger.h"

#include <signal.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <exception>
#include <future>
#include <mutex>
#include <stdexcept>
#include <string>
#include <string_view>
#include <unordered_set>
#include <vector>

#include "sluice/logger/detail/arg_codec.h"
#include "sluice/logger/detail/clock.h"
#include "sluice/logger/detail/crash_handler.h"
#include "sluice/logger/detail/state.h"
#include "sluice/fs/write_stream.h"
#include "sluice/loop/loop.h"
#include "sluice/loop/signals.h"
#include "sluice/sinks/detail/worker_protocol.h"

namespace sluice {

using detail::log_buffer;
using detail::log_queue;
using detail::log_record;

constinit thread_local logger::local_cache logger::local_{0, nullptr};

namespace {

std::atomic<std::uint64_t> next_logger_id{1};

// The loggers alive, by id, for the thread-exit hook: a thread that exits
// after its logger went must not touch the queue.
std::mutex live_mutex;
std::unordered_set<std::uint64_t>& live_loggers() {
  static auto* s = new std::unordered_set<std::uint64_t>;  // never freed: threads exit after static destructors
  return *s;
}

// A thread's queues, one per logger it printed to; at thread exit each is
// let go, so that a new thread takes it over.
struct thread_queues {
  struct entry {
    std::uint64_t id;
    log_queue* queue;
  };
  std::vector<entry> entries;
  ~thread_queues() {
    std::lock_guard lk(live_mutex);
    for (const entry& e : entries)
      if (live_loggers().contains(e.id)) e.queue->owned.store(false, std::memory_order_release);
  }
};
thread_local thread_queues my_queues;

// This thread's name (set_log_thread_name()), and every name given, kept
// for the process's life (the backend may be writing one as it is replaced).
thread_local const detail::log_thread_name* my_name = nullptr;
std::mutex names_mutex;

std::size_t round_pow2(std::size_t n) {
  std::size_t c = 4096;
  while (c < n) c <<= 1;
  return c;
}

}  // namespace

// ---- construction and the backend thread

namespace detail {
const log_site log_backtrace_marker{log_level::off, 0, "", ""};
}  // namespace detail

std::vector<log_destination> logger::one_destination(stream_factory make_stream, const logger_options& options) {
  std::vector<log_destination> d(1);
  d[0].make_stream = std::move(make_stream);
  d[0].pattern = options.pattern;
  d[0].format = options.format;
  return d;
}

logger::logger(std::vector<log_destination> destinations, const logger_options& options, int)
    : id_(next_logger_id.fetch_add(1)), level_(options.level), gate_(options.level), state_(std::make_unique<state>()) {
  state& s = *state_;
  s.options = options;
  if (destinations.empty()) throw std::invalid_argument("sluice::logger: no destination");
  bool stamped = false;
  s.outputs.resize(destinations.size());
  for (std::size_t i = 0; i < destinations.size(); ++i) {
    const log_destination& d = destinations[i];
    if (!d.make_stream) throw std::invalid_argument("sluice::logger: a destination without a stream factory");
    bool pattern_time = false;
    state::output& o = s.outputs[i];
    if (d.format == log_format::pattern) o.pattern = state::compile_pattern(d.pattern, pattern_time);
    o.level = d.level;
    o.format = d.format;
    o.colors = d.colors && d.format == log_format::pattern;
    // JSON lines always say when.
    stamped = stamped || pattern_time || d.format == log_format::json;
    s.json_outputs = s.json_outputs || d.format == log_format::json;
  }
  const detail::log_clock precise = detail::tsc_invariant() ? detail::log_clock::tsc : detail::log_clock::realtime;
  switch (options.timestamp) {
    case log_timestamp::none: clock_ = detail::log_clock::none; break;
    case log_timestamp::coarse: clock_ = detail::log_clock::coarse; break;
    case log_timestamp::precise: clock_ = precise; break;
    case log_timestamp::realtime: clock_ = detail::log_clock::realtime; break;
  }
  // One clock for both kinds of line, so that the backend reads every
  // stamp the same way: print()'s, else precise when a pattern has {time}
  // (or the lines are JSON).
  site_clock_ = clock_ != detail::log_clock::none ? clock_ : stamped ? precise : detail::log_clock::none;
  s.clock = site_clock_;
  if (s.clock == detail::log_clock::tsc) s.tsc.calibrate();
  s.options.ring_size = round_pow2(options.ring_size);
  s.options.max_ring_size = std::max(s.options.ring_size, round_pow2(options.max_ring_size));
  if (s.options.poll_interval.count() < 1) s.options.poll_interval = std::chrono::milliseconds(1);
  s.destinations = std::move(destinations);
  s.id = id_;
  {
    std::lock_guard lk(live_mutex);
    live_loggers().insert(id_);
  }
  std::promise<void> started;
  auto made = started.get_future();
  s.backend = std::thread([&s, p = std::move(started)]() mutable { s.run_backend(p); });
  try {
    made.get();
  } catch (...) {
    s.backend.join();
    std::lock_guard lk(live_mutex);
    live_loggers().erase(id_);
    throw;
  }
  if (s.options.crash_handler) detail::add_crash_logger(s);
}

logger::~logger() {
  state& s = *state_;
  s.stopping.store(true, std::memory_order_seq_cst);
  s.kick();
  s.backend.join();
  detail::remove_crash_logger(s);
  {
    std::lock_guard lk(live_mutex);
    live_loggers().erase(id_);
  }
  for (log_queue* q = s.queues.load(std::memory_order_acquire); q;) {
    log_queue* next = q->next_queue;
    for (log_buffer* b : q->unlanded) delete b;
    delete q;
    q = next;
  }
}

void logger::state::run_backend(std::promise<void>& started) {
  loop& l = loop::current();
  try {
    for (std::size_t i = 0; i < outputs.size(); ++i) {
      outputs[i].stream = destinations[i].make_stream();
      if (!outputs[i].stream) throw std::invalid_argument("sluice::logger: the stream factory returned null");
      // A stream's error reaches flush() (errored()) and its lines'
      // callbacks, and the output writes no more: the others go on, and
      // nothing waits for a 'drain' that a failed stream never emits.
      outputs[i].stream->on(event::error, [this, i](std::error_code) { output_failed(i); });
    }
    if (options.handle_term_signals) {
      term_watch = on_signal(l, SIGTERM, [this] { on_term(SIGTERM); });
      int_watch = on_signal(l, SIGINT, [this] { on_term(SIGINT); });
    }
  } catch (...) {
    for (output& o : outputs) o.stream.reset();
    started.set_exception(std::current_exception());
    return;
  }
  {
    std::lock_guard lk(loop_mutex);
    home = &l;
  }
  l.hold();  // posts (kick()) are expected until the end
  started.set_value();
  schedule_pass();
  l.run();
  {
    std::lock_guard lk(loop_mutex);
    home = nullptr;
  }
  for (output& o : outputs) o.stream.reset();
  backtrace.clear();
  if (term_signo) {
    // The lines are written: now the signal's own action (the watch gave
    // back the disposition it found, the default unless someone had one).
    ::raise(term_signo);
  }
}

// Any thread: run a pass soon, once until the backend has run it.
void logger::state::kick() {
  if (kicked.exchange(true, std::memory_order_acq_rel)) return;
  std::lock_guard lk(loop_mutex);
  if (!home) return;
  home->post([this] {
    kicked.store(false, std::memory_order_release);
    if (timer) {
      home->clear_timeout(timer);
      timer = 0;
    }
    schedule_pass();
  });
}

void logger::state::schedule_pass() {
  if (pass_queued || ending) return;
  pass_queued = true;
  home->set_immediate([this] {
    pass_queued = false;
    pass();
  });
}

// One pass over the rings: each queue's lines into the stream, a budget at
// a time so that the loop gets its turns (the stream's writes, 'drain').
void logger::state::pass() {
  if (timer) {
    home->clear_timeout(timer);
    timer = 0;
  }
  if (paused || ending) return;
  if (clock == detail::log_clock::tsc) tsc.maybe_refit();
  const bool stop = stopping.load(std::memory_order_seq_cst);
  // A flush() waits for the lines printed before it: where each queue's
  // lines end as the pass sees the request.
  const std::uint64_t flush_target = flush_asked.load(std::memory_order_acquire);
  if (flush_target != flush_snapped) {
    for (log_queue* q = queues.load(std::memory_order_acquire); q; q = q->next_queue) {
      log_buffer* b = q->read_buf ? q->read_buf : q->crash_buf.load(std::memory_order_acquire);
      while (log_buffer* n = b->next.load(std::memory_order_acquire)) b = n;
      q->flush_stop = b->base + b->tail.load(std::memory_order_acquire);
    }
    flush_snapped = flush_target;
  }
  std::size_t budget = 8192;
  bool more = false;
  for (log_queue* q = queues.load(std::memory_order_acquire); q; q = q->next_queue) {
    std::size_t queue_budget = std::min<std::size_t>(budget, 2048);
    const std::size_t before = queue_budget;
    const drained d = drain_queue(*q, queue_budget);
    budget -= before - queue_budget;
    if (d == drained::pushed_back) {
      // Each output that pushed back drains before the next line; the run
      // was closed with a landing callback (drain_queue()).
      paused = true;
      for (output& o : outputs) {
        if (!std::exchange(o.pushed_back, false) || o.failed) continue;
        ++paused_outputs;
        o.waiting_drain = true;
        o.stream->once(event::drain, [this, &o] { drained_one(o); });
      }
      if (!paused_outputs) {
        paused = false;
        schedule_pass();
      }
      return;
    }
    if (d == drained::budget) more = true;
    if (budget == 0) {
      more = true;
      break;
    }
  }
  check_flush();
  if (more) {
    schedule_pass();
  } else if (stop) {
    // Every line printed before stopping is in the stream: end it; its
    // callback comes once they are written.
    ending = true;
    // Drops after a thread's last line have no line to go before: told here.
    for (log_queue* q = queues.load(std::memory_order_acquire); q; q = q->next_queue) {
      const std::uint64_t n = q->dropped.load(std::memory_order_relaxed) - q->reported_drops;
      if (n)
        for (output& o : outputs)
          if (!o.failed) o.stream->print(fmt::runtime(detail::log_drop_format), n);
      q->reported_drops += n;
    }
    term_watch.reset();
    int_watch.reset();
    ends_pending = outputs.size();
    for (output& o : outputs)
      o.stream->end([this](std::error_code ec) {
        if (ec && !end_error) end_error = ec;
        if (--ends_pending == 0) finish(end_error);
      });
  } else {
    timer = home->set_timeout(options.poll_interval, [this] {
      timer = 0;
      schedule_pass();
    });
  }
}

logger::state::drained logger::state::drain_queue(log_queue& q, std::size_t& budget) {
  if (!q.read_buf) {
    // First sight of the queue (published with its first buffer).
    q.read_buf = q.crash_buf.load(std::memory_order_acquire);
    q.unlanded.push_back(q.read_buf);
    if (outputs.size() > 1) q.landed_by.assign(outputs.size(), 0);
  }
  for (;;) {
    log_buffer* b = q.read_buf;
    std::uint64_t tail = b->tail.load(std::memory_order_acquire);
    if (q.read_pos == tail) {
      log_buffer* next = b->next.load(std::memory_order_acquire);
      if (!next) return drained::empty;
      if (b->tail.load(std::memory_order_acquire) != q.read_pos) continue;
      q.read_buf = next;
      q.read_pos = 0;
      q.unlanded.push_back(next);
      continue;
    }
    while (q.read_pos != tail) {
      if (budget == 0) return drained::budget;
      const std::size_t off = q.read_pos & b->mask;
      const auto* r = reinterpret_cast<const log_record*>(b->data + off);
      if (r->size == 0) {
        q.read_pos += b->capacity - off;
        continue;
      }
      const std::uint64_t end = q.read_pos + r->size;
      --budget;
      // The last line of this run tells when it and those before it landed
      // (a position past a record, never 0).
      const std::uint64_t landed_at = end == tail || budget == 0 ? b->base + end : 0;
      q.reported_drops += r->dropped;
      const bool ok = write_line(q, *r, landed_at);
      q.read_pos = end;
      if (!ok) {
        // The pass stops here until 'drain': the run so far lands when the
        // outputs have written it.
        if (!landed_at) close_run(q, b->base + end);
        return drained::pushed_back;
      }
    }
  }
}

write_cb logger::state::land_cb(log_queue& q, std::uint64_t pos, std::size_t output) {
  return [qp = &q, pos, output](std::error_code) { static_cast<logger::state*>(qp->owner)->landed_on(*qp, pos, output); };
}

// Output `output` wrote queue q up to `pos`: the queue has landed as far as
// the slowest output has.
void logger::state::landed_on(log_queue& q, std::uint64_t pos, std::size_t output) noexcept {
  if (q.landed_by.empty()) return land(q, pos);
  q.landed_by[output] = std::max(q.landed_by[output], pos);
  const std::uint64_t all = *std::min_element(q.landed_by.begin(), q.landed_by.end());
  if (all > q.landed) land(q, all);
}

bool logger::state::close_run(log_queue& q, std::uint64_t pos) {
  bool ok = true;
  for (std::size_t i = 0; i < outputs.size(); ++i) {
    if (outputs[i].failed) continue;
    if (!outputs[i].stream->write(std::string_view(), land_cb(q, pos, i))) {
      outputs[i].pushed_back = true;
      ok = false;
    }
  }
  return ok;
}

// 'drain' of an output that pushed back: the pass goes on once each has.
void logger::state::drained_one(output& o) {
  if (!std::exchange(o.waiting_drain, false) || --paused_outputs) return;
  paused = false;
  schedule_pass();
}

// Output i's stream failed ('error'): it writes nothing more, and the
// queues land as far as the others have written (its own callbacks still
// come, with the error). With every output failed, the lines read are gone,
// and the lines after them are dropped and counted (write_line()), so that
// no producer waits for room that would never come.
void logger::state::output_failed(std::size_t i) {
  output& o = outputs[i];
  if (o.failed) return;
  o.failed = true;
  ++failed_outputs;
  for (log_queue* q = queues.load(std::memory_order_acquire); q; q = q->next_queue) {
    if (q->landed_by.empty()) continue;
    q->landed_by[i] = ~std::uint64_t{0};
    const std::uint64_t all = *std::min_element(q->landed_by.begin(), q->landed_by.end());
    if (all > q->landed) land(*q, all);
  }
  if (failed_outputs == outputs.size()) land_all();
  if (o.waiting_drain) drained_one(o);
  check_flush();
}

bool logger::state::write_line(log_queue& q, const log_record& r, std::uint64_t landed_at) {
  if (failed_outputs == outputs.size()) [[unlikely]] {
    if (r.site != &detail::log_backtrace_marker) q.dropped.fetch_add(1, std::memory_order_relaxed);
    if (landed_at) land(q, landed_at);
    return true;
  }
  if (r.dropped)
    for (output& o : outputs)
      if (!o.failed) o.stream->print(fmt::runtime(detail::log_drop_format), r.dropped);
  if (r.site) {
    if (r.site == &detail::log_backtrace_marker) {
      // enable_backtrace() (its settings as arguments) or flush_backtrace().
      bool ok = true;
      if (r.size > sizeof(log_record)) {
        const auto* a = reinterpret_cast<const std::byte*>(&r + 1);
        backtrace_size = static_cast<std::size_t>(detail::log_load<std::uint64_t>(a));
        backtrace_flush_level = static_cast<log_level>(detail::log_load<std::uint8_t>(a));
        while (backtrace.size() > backtrace_size) backtrace.pop_front();
      } else {
        ok = write_backtrace();
      }
      return landed_at ? close_run(q, landed_at) && ok : ok;
    }
    const std::uint64_t stamp = r.timestamp ? line_stamp(q, r) : 0;
    if (r.backtrace_only) {
      if (backtrace_size) keep_for_backtrace(q, r, stamp);
      return landed_at ? close_run(q, landed_at) : true;
    }
    bool ok = true;
    if (!backtrace.empty() && r.site->level >= backtrace_flush_level) ok = write_backtrace();
    return write_site_line(q, r, stamp, &q, landed_at) && ok;
  }
  char buf[40];
  const std::size_t n = r.timestamp ? format_time(line_stamp(q, r), buf) : 0;
  bool ok = true;
  for (std::size_t i = 0; i < outputs.size(); ++i) {
    if (outputs[i].failed) continue;
    writable& stream = *outputs[i].stream;
    if (n) stream.write(std::string_view(buf, n));
    detail::log_output out;
    out.stream = &stream;
    if (landed_at) out.cb = land_cb(q, landed_at, i);
    bool wrote;
    try {
      wrote = r.decode(reinterpret_cast<const std::byte*>(&r + 1), r.format, r.format_size, out);
    } catch (const std::exception& e) {
      // A runtime format fmt rejects (fmt::runtime("bad {} {}") given one
      // argument), or a spec such as a dynamic width out of range: the line
      // says so, as fmt would throw. The throw took the line's callback with
      // it (vprint() had it by value), so the error line carries a new one:
      // without it, the run would never land and flush() would wait for ever.
      write_cb cb;
      if (landed_at) cb = land_cb(q, landed_at, i);
      const char* what = e.what();
      const std::string_view format(r.format, r.format_size);
      wrote = stream.vprint("sluice::logger: format error: {}: {}\n", fmt::make_format_args(what, format), std::move(cb));
    }
    if (!wrote) {
      outputs[i].pushed_back = true;
      ok = false;
    }
  }
  return ok;
}

// ---- the backtrace (enable_backtrace())

// A line below the level, kept: its record copied (its arguments are in
// it, by value), its stamp as its thread's lines go.
void logger::state::keep_for_backtrace(const log_queue& q, const log_record& r, std::uint64_t stamp) {
  while (backtrace.size() >= backtrace_size) {
    spare_records.push_back(std::move(backtrace.front().record));
    backtrace.pop_front();
  }
  std::vector<std::byte> copy;
  if (!spare_records.empty()) {
    copy = std::move(spare_records.back());
    spare_records.pop_back();
  }
  const auto* bytes = reinterpret_cast<const std::byte*>(&r);
  copy.assign(bytes, bytes + r.size);
  backtrace.push_back({std::move(copy), &q, stamp});
}

// The kept lines, oldest first, to the outputs whose levels take them.
bool logger::state::write_backtrace() {
  bool ok = true;
  while (!backtrace.empty()) {
    kept_line& k = backtrace.front();
    const auto& r = *reinterpret_cast<const log_record*>(k.record.data());
    ok &= write_site_line(*k.queue, r, k.stamp, nullptr, 0);
    spare_records.push_back(std::move(k.record));
    backtrace.pop_front();
  }
  return ok;
}

// The stream wrote everything up to `pos` of queue q (positions count from
// the queue's first byte): that room is free, and a crash no longer needs it.
void logger::state::land(log_queue& q, std::uint64_t pos) noexcept {
  q.landed = std::max(q.landed, pos);
  while (q.unlanded.size() > 1) {
    log_buffer* front = q.unlanded.front();
    if (pos < front->base + front->tail.load(std::memory_order_acquire)) break;
    q.unlanded.pop_front();
    q.crash_buf.store(q.unlanded.front(), std::memory_order_release);
    delete front;
  }
  log_buffer* front = q.unlanded.front();
  if (pos >= front->base) front->head.store(std::max(front->head.load(std::memory_order_relaxed), pos - front->base),
                                            std::memory_order_release);
  // Dekker with a waiting producer: it says so, then looks at head. It is
  // woken once half the ring is free (or it may be in a later buffer), so
  // that it does not wake for every few lines and take the CPU the backend
  // needs to make room.
  std::atomic_thread_fence(std::memory_order_seq_cst);
  if (q.waiting.load(std::memory_order_relaxed) &&
      (q.unlanded.size() > 1 ||
       front->tail.load(std::memory_order_relaxed) - front->head.load(std::memory_order_relaxed) <= front->capacity / 2)) {
    q.space_epoch.fetch_add(1, std::memory_order_release);
    detail::wake(q.space_epoch, false);
  }
  check_flush();
}

// 'drain': everything handed to the stream is written.
void logger::state::land_all() noexcept {
  for (log_queue* q = queues.load(std::memory_order_acquire); q; q = q->next_queue)
    if (q->read_buf) land(*q, q->read_buf->base + q->read_pos);
}

// A flush is done once each queue's lines up to its flush_stop have landed
// (or the stream can write nothing more).
void logger::state::check_flush() noexcept {
  if (flush_snapped == flush_told) return;
  std::error_code error;  // the first output's
  bool can_write = false;
  for (const output& o : outputs) {
    if (!error) error = o.stream->errored();
    can_write = can_write || (!o.stream->destroyed() && !o.stream->errored());
  }
  if (can_write) {
    for (log_queue* q = queues.load(std::memory_order_acquire); q; q = q->next_queue)
      if (q->landed < q->flush_stop) return;
  }
  flush_told = flush_snapped;
  std::lock_guard lk(flush_mutex);
  flush_done = flush_told;
  flush_error = error;
  flush_cv.notify_all();
}

void logger::state::finish(std::error_code ec) noexcept {
  land_all();
  finished.store(true, std::memory_order_seq_cst);
  {
    std::lock_guard lk(flush_mutex);
    flush_done = ~std::uint64_t{0};
    if (ec) flush_error = ec;
    flush_cv.notify_all();
  }
  for (log_queue* q = queues.load(std::memory_order_acquire); q; q = q->next_queue) {
    q->space_epoch.fetch_add(1, std::memory_order_release);
    detail::wake(q->space_epoch, false);
  }
  home->release();
}

void logger::state::on_term(int signo) {
  if (term_signo) return;
  term_signo = signo;
  stopping.store(true, std::memory_order_seq_cst);
  if (timer) {
    home->clear_timeout(timer);
    timer = 0;
  }
  schedule_pass();
}

// ---- the producers' slow paths

log_queue* logger::attach_thread() {
  state& s = *state_;
  for (const auto& e : my_queues.entries)
    if (e.id == id_) {
      local_ = {id_, e.queue};
      return e.queue;
    }
  if (s.stopping.load(std::memory_order_relaxed)) return nullptr;
  log_queue* q = nullptr;
  {
    std::lock_guard lk(s.attach_mutex);
    for (log_queue* c = s.queues.load(std::memory_order_acquire); c; c = c->next_queue) {
      bool free = false;
      if (!c->owned.load(std::memory_order_relaxed) && c->owned.compare_exchange_strong(free, true, std::memory_order_acquire)) {
        q = c;
        break;
      }
    }
    if (!q) {
      q = new log_queue;
      q->owner = &s;
      auto* b = new log_buffer(s.options.ring_size, 0);
      q->write_into(b);
      q->crash_buf.store(b, std::memory_order_relaxed);
      q->next_queue = s.queues.load(std::memory_order_relaxed);
      s.queues.store(q, std::memory_order_release);
    }
  }
  q->thread_id = static_cast<std::uint32_t>(::gettid());  // its records', from now on
  q->thread_name.store(my_name, std::memory_order_release);
  my_queues.entries.push_back({id_, q});
  local_ = {id_, q};
  return q;
}

std::byte* logger::reserve_slow(log_queue*& q, std::size_t size) {
  state& s = *state_;
  if (!q) {
    q = local_queue();
    if (!q) return nullptr;
    if (std::byte* p = q->reserve(size)) return p;
  }
  if (s.finished.load(std::memory_order_acquire)) return nullptr;
  const logger_options& o = s.options;
  auto drop = [&]() -> std::byte* {
    if (q->pending_drops < detail::log_max_told_drops) ++q->pending_drops;
    q->dropped.fetch_add(1, std::memory_order_relaxed);
    s.kick();
    return nullptr;
  };
  const bool can_grow = o.on_full == full_policy::grow && q->write_buf->capacity < o.max_ring_size;
  if (size > q->write_buf->capacity && !(o.on_full == full_policy::grow && size <= o.max_ring_size)) return drop();
  if (can_grow) {
    // A bigger buffer; the backend finds it after this one's last record.
    std::size_t cap = q->write_buf->capacity * 2;
    while (cap < size) cap *= 2;
    cap = std::min(cap, o.max_ring_size);
    log_buffer* old = q->write_buf;
    auto* b = new log_buffer(cap, old->base + q->write_pos);
    old->next.store(b, std::memory_order_release);
    q->write_into(b);
    return q->reserve(size);
  }
  if (o.on_full == full_policy::drop) return drop();
  // block: the backend may be asleep for poll_interval; wake it, spin a
  // little (it frees room as the stream writes), then sleep until it does.
  // A short spin: the backend needs a CPU to make room, and several
  // producers spinning on two cores would take them.
  s.kick();
  const auto spin_until = std::chrono::steady_clock::now() + std::chrono::microseconds(5);
  do {
    for (int i = 0; i < 64; ++i) detail::cpu_relax();
    if (std::byte* p = q->reserve(size)) return p;
  } while (std::chrono::steady_clock::now() < spin_until);
  q->waiting.store(true, std::memory_order_seq_cst);
  std::atomic_thread_fence(std::memory_order_seq_cst);  // then look at head (see land())
  std::byte* p = nullptr;
  for (;;) {
    const std::uint32_t epoch = q->space_epoch.load(std::memory_order_seq_cst);
    if ((p = q->reserve(size))) break;
    if (s.finished.load(std::memory_order_acquire)) break;
    s.kick();
    detail::sleep_on_for(q->space_epoch, epoch, std::chrono::milliseconds(10));
  }
  q->waiting.store(false, std::memory_order_relaxed);
  return p;
}

// ---- levels, the backtrace, thread names, the console

void logger::set_level(log_level l) noexcept {
  std::lock_guard lk(state_->level_mutex);
  level_.store(l, std::memory_order_relaxed);
  gate_.store(state_->backtrace_on.load(std::memory_order_relaxed) ? log_level::trace : l, std::memory_order_relaxed);
}

// The settings travel in this thread's ring, so that the backend takes them
// in order with the thread's lines (a line taken for the backtrace just
// before the call is kept, or not, as the settings before the call say).
void logger::enable_backtrace(std::size_t n, log_level flush_level) {
  {
    std::lock_guard lk(state_->level_mutex);
    state_->backtrace_on.store(n != 0, std::memory_order_relaxed);
    gate_.store(n ? log_level::trace : level_.load(std::memory_order_relaxed), std::memory_order_relaxed);
  }
  const auto size = static_cast<std::uint64_t>(n);
  const auto level = static_cast<std::uint8_t>(flush_level);
  put<std::uint64_t, std::uint8_t>(nullptr, 0, &detail::log_backtrace_marker, false, detail::log_clock::none,
                                   &detail::log_decode<>, size, level);
}

void logger::flush_backtrace() {
  put<>(nullptr, 0, &detail::log_backtrace_marker, false, detail::log_clock::none, &detail::log_decode<>);
}

void set_log_thread_name(std::string_view name) {
  static auto* names = new std::vector<std::unique_ptr<detail::log_thread_name>>;  // never freed, as the threads
  const auto tid = static_cast<std::uint32_t>(::gettid());
  {
    std::lock_guard lk(names_mutex);
    auto it = std::find_if(names->begin(), names->end(),
                           [&](const auto& n) { return n->thread == tid && n->name == name; });
    if (it == names->end()) {
      names->push_back(std::make_unique<detail::log_thread_name>(detail::log_thread_name{tid, std::string(name)}));
      it = names->end() - 1;
    }
    my_name = it->get();
  }
  for (const auto& e : my_queues.entries) e.queue->thread_name.store(my_name, std::memory_order_release);
}

bool log_colors_for(int fd) noexcept {
  const char* no_color = std::getenv("NO_COLOR");
  return ::isatty(fd) == 1 && (!no_color || !*no_color);
}

log_destination log_console(log_level level, int fd) {
  log_destination d;
  d.make_stream = [fd] { return std::unique_ptr<writable>(make_fd_writable(fd)); };
  d.level = level;
  d.colors = log_colors_for(fd);
  return d;
}

std::uint64_t logger::now(detail::log_clock clock) noexcept {
  return detail::realtime_ns(clock == detail::log_clock::coarse ? CLOCK_REALTIME_COARSE : CLOCK_REALTIME);
}

std::error_code logger::flush() {
  state& s = *state_;
  std::unique_lock lk(s.flush_mutex);
  if (s.finished.load(std::memory_order_acquire)) return s.flush_error;
  const std::uint64_t ticket = s.flush_asked.fetch_add(1, std::memory_order_acq_rel) + 1;
  lk.unlock();
  s.kick();
  lk.lock();
  s.flush_cv.wait(lk, [&] { return s.flush_done >= ticket; });
  return s.flush_error;
}

std::uint64_t logger::dropped() const noexcept {
  std::uint64_t n = 0;
  for (log_queue* q = state_->queues.load(std::memory_order_acquire); q; q = q->next_queue)
    n += q->dropped.load(std::memory_order_relaxed);
  return n;
}

}  // namespace sluice
