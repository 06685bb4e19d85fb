// logger: the backend thread, the slow paths of print(), shutdown and the
// crash handler. The fast path is print() in logger.h.
//
// ---- Who touches what
//
// A producer thread owns one log_queue per logger (attach_thread): it alone
// writes records and moves `tail`. The backend thread alone reads records,
// hands each line to the stream (vprint, which formats through the stream's
// parsed-format cache), and moves `head` once the stream's write callback
// says the line landed: so a full ring means lines not yet written, and the
// crash handler writes from `head`. Queues are never unlinked while the
// logger lives (the crash handler walks the list without a lock); a thread
// that exits lets go of its queue, and the next new thread takes it over.
//
// Waking: print() never wakes the backend. The backend drains, then sleeps
// for poll_interval on its loop's timer; a full ring, flush() and shutdown
// post to its loop (kick()), once until the backend has run. A producer
// waiting for room sleeps on its queue's `space_epoch`, which the backend
// bumps when it has freed half the ring and sees `waiting`.
#include "sluice/logger.h"

#include <fcntl.h>
#include <signal.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <condition_variable>
#include <csignal>
#include <cstring>
#include <exception>
#include <fstream>
#include <future>
#include <mutex>
#include <span>
#include <sstream>
#include <thread>
#include <unordered_set>
#include <vector>

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

std::size_t round_pow2(std::size_t n) {
  std::size_t c = 4096;
  while (c < n) c <<= 1;
  return c;
}

// ---- time, formatted without gmtime (the crash handler uses it too)

struct civil {
  int y;
  unsigned m, d;
};
// Howard Hinnant's civil_from_days.
civil civil_from_days(std::int64_t z) noexcept {
  z += 719468;
  const std::int64_t era = (z >= 0 ? z : z - 146096) / 146097;
  const auto doe = static_cast<unsigned>(z - era * 146097);
  const unsigned yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
  const std::int64_t y = static_cast<std::int64_t>(yoe) + era * 400;
  const unsigned doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
  const unsigned mp = (5 * doy + 2) / 153;
  const unsigned d = doy - (153 * mp + 2) / 5 + 1;
  const unsigned m = mp < 10 ? mp + 3 : mp - 9;
  return {static_cast<int>(y + (m <= 2)), m, d};
}

void put_digits(char* p, unsigned v, int n) noexcept {
  for (int i = n - 1; i >= 0; --i) {
    p[i] = static_cast<char>('0' + v % 10);
    v /= 10;
  }
}

// "2026-12-02T01:19:04.123Z " (coarse) or "2026-12-02T01:19:04.123456Z "
// (precise) into p; returns its length.
std::size_t format_stamp(char* p, std::uint64_t ns, bool precise) noexcept {
  const std::int64_t secs = static_cast<std::int64_t>(ns / 1'000'000'000);
  const std::int64_t days = secs / 86400;
  const auto sod = static_cast<unsigned>(secs % 86400);
  const civil c = civil_from_days(days);
  put_digits(p, static_cast<unsigned>(c.y), 4);
  p[4] = '-';
  put_digits(p + 5, c.m, 2);
  p[7] = '-';
  put_digits(p + 8, c.d, 2);
  p[10] = 'T';
  put_digits(p + 11, sod / 3600, 2);
  p[13] = ':';
  put_digits(p + 14, sod / 60 % 60, 2);
  p[16] = ':';
  put_digits(p + 17, sod % 60, 2);
  p[19] = '.';
  const auto frac = static_cast<unsigned>(ns % 1'000'000'000);
  std::size_t n = 20;
  if (precise) {
    put_digits(p + n, frac / 1000, 6);
    n += 6;
  } else {
    put_digits(p + n, frac / 1'000'000, 3);
    n += 3;
  }
  p[n++] = 'Z';
  p[n++] = ' ';
  return n;
}

constexpr std::string_view drop_format = "sluice::logger: {} lines dropped\n";

// ---- the TSC as the wall clock (log_timestamp::precise)
//
// print() stores the counter; the backend maps it to CLOCK_REALTIME with a
// line (base, slope) it refits every second against pairs read together.
// A refit does not jump: it starts where the old line is at that moment
// and slews the difference out over the next interval, so that the stamps
// of one thread stay in order across it. Only a wall clock stepped by more
// than a millisecond (settimeofday, an NTP step) makes it start afresh.

// The counter ticks at one rate in every state and on every core, and the
// kernel trusts it (it falls back to another clocksource when it does not).
bool tsc_invariant() {
#if defined(__x86_64__) || defined(__i386__)
  static const bool ok = [] {
    std::ifstream cpuinfo("/proc/cpuinfo");
    std::string line;
    bool constant = false, nonstop = false;
    while (std::getline(cpuinfo, line) && line.rfind("flags", 0) != 0) {
    }
    std::istringstream flags(line);
    for (std::string f; flags >> f;) {
      constant |= f == "constant_tsc";
      nonstop |= f == "nonstop_tsc";
    }
    std::ifstream source("/sys/devices/system/clocksource/clocksource0/current_clocksource");
    std::string clocksource;
    source >> clocksource;
    return constant && nonstop && clocksource == "tsc";
  }();
  return ok;
#else
  return false;
#endif
}

std::uint64_t realtime_ns(clockid_t id) noexcept {
  timespec ts;
  ::clock_gettime(id, &ts);
  return static_cast<std::uint64_t>(ts.tv_sec) * 1'000'000'000u + static_cast<std::uint64_t>(ts.tv_nsec);
}

struct tsc_sample {
  std::uint64_t tsc, ns;
};
// The counter and the wall clock read together: of a few tries, the one
// whose clock_gettime the two counter reads bracket most tightly (the
// others were interrupted).
tsc_sample sample_tsc() noexcept {
  tsc_sample best{};
  std::uint64_t best_gap = ~std::uint64_t{0};
  for (int i = 0; i < 8; ++i) {
    const std::uint64_t a = detail::log_tsc();
    const std::uint64_t ns = realtime_ns(CLOCK_REALTIME);
    const std::uint64_t b = detail::log_tsc();
    if (b - a < best_gap) {
      best_gap = b - a;
      best = {a + (b - a) / 2, ns};
    }
  }
  return best;
}

class tsc_clock {
 public:
  // Two samples 2 ms apart: a slope good to about 1e-5 until the first
  // refit, 50 ms later.
  void calibrate() {
    origin_ = sample_tsc();
    const std::uint64_t until = origin_.ns + 2'000'000;
    while (realtime_ns(CLOCK_REALTIME) < until) detail::cpu_relax();
    const tsc_sample s = sample_tsc();
    publish(s.tsc, s.ns, static_cast<double>(s.ns - origin_.ns) / static_cast<double>(s.tsc - origin_.tsc));
    last_fit_ = s.tsc;
    interval_ns_ = 50'000'000;
  }
  // The backend, on each pass: refits once the interval is over (50 ms,
  // doubling up to 1 s).
  void maybe_refit() noexcept {
    const std::uint64_t now = detail::log_tsc();
    const double slope = current().slope.load(std::memory_order_relaxed);
    if (static_cast<double>(now - last_fit_) * slope < static_cast<double>(interval_ns_)) return;
    const tsc_sample s = sample_tsc();
    const std::uint64_t mapped = to_ns(s.tsc);
    const auto off = static_cast<std::int64_t>(s.ns - mapped);
    if (off > 1'000'000 || off < -1'000'000 || s.ns <= origin_.ns || s.tsc <= origin_.tsc) {
      // The wall clock was stepped: start from here, at the old rate.
      origin_ = {s.tsc - 1, s.ns - static_cast<std::uint64_t>(slope)};
      publish(s.tsc, s.ns, slope);
    } else {
      interval_ns_ = std::min<std::uint64_t>(interval_ns_ * 2, 1'000'000'000);
      const double rate = static_cast<double>(s.ns - origin_.ns) / static_cast<double>(s.tsc - origin_.tsc);
      // Continuous at s.tsc; reaches the fitted line one interval later.
      const double ticks = static_cast<double>(interval_ns_) / rate;
      publish(s.tsc, mapped, std::max(rate + static_cast<double>(off) / ticks, rate / 2));
    }
    last_fit_ = s.tsc;
  }
  // Any thread (the crash handler too): the counter's value as ns since the
  // epoch.
  std::uint64_t to_ns(std::uint64_t tsc) const noexcept {
    const fit& f = current();
    const auto delta = static_cast<double>(static_cast<std::int64_t>(tsc - f.tsc.load(std::memory_order_relaxed)));
    return f.ns.load(std::memory_order_relaxed) +
           static_cast<std::uint64_t>(std::llround(delta * f.slope.load(std::memory_order_relaxed)));
  }

 private:
  // Two fits, one being read: the backend writes the other, then flips, so
  // that a reader (the crash handler, on another thread) sees a whole one.
  struct fit {
    std::atomic<std::uint64_t> tsc{0}, ns{0};
    std::atomic<double> slope{1};
  };
  const fit& current() const noexcept { return fits_[which_.load(std::memory_order_acquire)]; }
  void publish(std::uint64_t tsc, std::uint64_t ns, double slope) noexcept {
    fit& f = fits_[1 - which_.load(std::memory_order_relaxed)];
    f.tsc.store(tsc, std::memory_order_relaxed);
    f.ns.store(ns, std::memory_order_relaxed);
    f.slope.store(slope, std::memory_order_relaxed);
    which_.store(1 - which_.load(std::memory_order_relaxed), std::memory_order_release);
  }

  fit fits_[2];
  std::atomic<int> which_{0};
  tsc_sample origin_{};  // the backend's
  std::uint64_t last_fit_ = 0;
  std::uint64_t interval_ns_ = 0;
};

// ---- the crash handler

constexpr int crash_signals[] = {SIGSEGV, SIGABRT, SIGBUS, SIGILL, SIGFPE};
constexpr std::size_t max_crash_loggers = 16;
std::atomic<logger::state*> crash_loggers[max_crash_loggers];
std::once_flag crash_installed;
void on_crash(int signo) noexcept;

}  // namespace

struct logger::state {
  logger_options options;
  stream_factory make_stream;
  std::uint64_t id = 0;

  std::atomic<log_queue*> queues{nullptr};  // pushed at the front, never unlinked
  std::mutex attach_mutex;

  std::thread backend;
  std::mutex loop_mutex;
  loop* home = nullptr;  // the backend's loop while it runs (loop_mutex)
  std::atomic<bool> kicked{false};
  std::atomic<bool> stopping{false};
  std::atomic<bool> finished{false};


  std::mutex flush_mutex;
  std::condition_variable flush_cv;
  std::atomic<std::uint64_t> flush_asked{0};
  std::uint64_t flush_done = 0;  // flush_mutex
  std::error_code flush_error;   // flush_mutex

  // ---- the backend thread's
  std::unique_ptr<writable> stream;
  bool paused = false;  // write() returned false: waiting for 'drain'
  bool pass_queued = false;
  timer_id timer = 0;
  bool ending = false;
  std::uint64_t flush_snapped = 0;  // the flush whose ends the queues' flush_stop hold
  std::uint64_t flush_told = 0;     // the flushes told they are done
  int term_signo = 0;
  signal_watch term_watch, int_watch;
  tsc_clock tsc;  // log_clock::tsc
  detail::log_clock clock = detail::log_clock::none;

  // A record's timestamp as ns since the epoch.
  std::uint64_t stamp_ns(std::uint64_t t) const noexcept { return clock == detail::log_clock::tsc ? tsc.to_ns(t) : t; }
  bool precise_stamps() const noexcept { return clock == detail::log_clock::tsc || clock == detail::log_clock::realtime; }

  void run_backend(std::promise<void>& started);
  void kick();
  void schedule_pass();
  void pass();
  enum class drained { empty, budget, pushed_back };
  drained drain_queue(log_queue& q, std::size_t& budget);
  // Writes one record. `landed_at`, when not 0, is where the queue's lines
  // that it ends land (the last line of a run: see drain_queue()).
  bool write_line(log_queue& q, const log_record& r, std::uint64_t landed_at);
  static write_cb land_cb(log_queue& q, std::uint64_t pos);
  void land(log_queue& q, std::uint64_t pos) noexcept;
  void land_all() noexcept;
  void check_flush() noexcept;
  void finish(std::error_code ec) noexcept;
  void on_term(int signo);
};

// ---- construction and the backend thread

logger::logger(stream_factory make_stream, const logger_options& options, int)
    : id_(next_logger_id.fetch_add(1)), state_(std::make_unique<state>()) {
  state& s = *state_;
  s.options = options;
  switch (options.timestamp) {
    case log_timestamp::none: clock_ = detail::log_clock::none; break;
    case log_timestamp::coarse: clock_ = detail::log_clock::coarse; break;
    case log_timestamp::precise: clock_ = tsc_invariant() ? detail::log_clock::tsc : detail::log_clock::realtime; break;
    case log_timestamp::realtime: clock_ = detail::log_clock::realtime; break;
  }
  s.clock = clock_;
  if (clock_ == detail::log_clock::tsc) s.tsc.calibrate();
  s.options.ring_size = round_pow2(options.ring_size);
  s.options.max_ring_size = std::max(s.options.ring_size, round_pow2(options.max_ring_size));
  if (s.options.poll_interval.count() < 1) s.options.poll_interval = std::chrono::milliseconds(1);
  s.make_stream = std::move(make_stream);
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
  if (s.options.crash_handler) {
    std::size_t i = 0;
    for (; i < max_crash_loggers; ++i) {
      logger::state* expected = nullptr;
      if (crash_loggers[i].compare_exchange_strong(expected, &s)) break;
    }
    std::call_once(crash_installed, [] {
      for (int signo : crash_signals) {
        struct sigaction sa {};
        sa.sa_handler = [](int n) { on_crash(n); };
        sigemptyset(&sa.sa_mask);
        sa.sa_flags = SA_RESETHAND;
        ::sigaction(signo, &sa, nullptr);
      }
    });
  }
}

logger::~logger() {
  state& s = *state_;
  s.stopping.store(true, std::memory_order_seq_cst);
  s.kick();
  s.backend.join();
  for (auto& slot : crash_loggers) {
    logger::state* expected = &s;
    slot.compare_exchange_strong(expected, nullptr);
  }
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
    stream = make_stream();
    if (!stream) throw std::invalid_argument("sluice::logger: the stream factory returned null");
    if (options.handle_term_signals) {
      term_watch = on_signal(l, SIGTERM, [this] { on_term(SIGTERM); });
      int_watch = on_signal(l, SIGINT, [this] { on_term(SIGINT); });
    }
  } catch (...) {
    stream.reset();
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
  stream.reset();
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
      paused = true;
      stream->once(event::drain, [this] {
        paused = false;
        land_all();
        schedule_pass();
      });
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
      if (n) stream->print(fmt::runtime(drop_format), n);
      q->reported_drops += n;
    }
    term_watch.reset();
    int_watch.reset();
    stream->end([this](std::error_code ec) { finish(ec); });
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
      if (!ok) return drained::pushed_back;
    }
  }
}

write_cb logger::state::land_cb(log_queue& q, std::uint64_t pos) {
  return [qp = &q, pos](std::error_code) { static_cast<logger::state*>(qp->owner)->land(*qp, pos); };
}

bool logger::state::write_line(log_queue& q, const log_record& r, std::uint64_t landed_at) {
  if (r.dropped) stream->print(fmt::runtime(drop_format), r.dropped);
  if (r.timestamp) {
    std::uint64_t ns = stamp_ns(r.timestamp);
    // A thread's lines in order: a refit of the TSC's line may put a stamp
    // taken before it a hair behind the one before (a wall clock stepped
    // back by more than that goes back).
    if (ns < q.last_stamp && q.last_stamp - ns < 1'000'000) ns = q.last_stamp;
    q.last_stamp = ns;
    char buf[40];
    const std::size_t n = format_stamp(buf, ns, precise_stamps());
    stream->write(std::string_view(buf, n));
  }
  detail::log_output out;
  out.stream = stream.get();
  if (landed_at) out.cb = land_cb(q, landed_at);
  try {
    return r.decode(reinterpret_cast<const std::byte*>(&r + 1), r.format, r.format_size, out);
  } catch (const std::exception& e) {
    // A runtime format fmt rejects (fmt::runtime("bad {} {}") given one
    // argument), or a spec such as a dynamic width out of range: the line
    // says so, as fmt would throw. The throw took the line's callback with
    // it (vprint() had it by value), so the error line carries a new one:
    // without it, the run would never land and flush() would wait for ever.
    write_cb cb;
    if (landed_at) cb = land_cb(q, landed_at);
    const char* what = e.what();
    const std::string_view format(r.format, r.format_size);
    return stream->vprint("sluice::logger: format error: {}: {}\n", fmt::make_format_args(what, format), std::move(cb));
  }
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
  if (!stream->destroyed() && !stream->errored()) {
    for (log_queue* q = queues.load(std::memory_order_acquire); q; q = q->next_queue)
      if (q->landed < q->flush_stop) return;
  }
  flush_told = flush_snapped;
  std::lock_guard lk(flush_mutex);
  flush_done = flush_told;
  flush_error = stream->errored();
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
    ++q->pending_drops;
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

std::uint64_t logger::now() const noexcept {
  return realtime_ns(clock_ == detail::log_clock::coarse ? CLOCK_REALTIME_COARSE : CLOCK_REALTIME);
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

// ---- the crash handler: what the rings hold, with write(2)

namespace {

void write_all(int fd, const char* p, std::size_t n) noexcept {
  while (n > 0) {
    const ssize_t w = ::write(fd, p, n);
    if (w < 0) {
      if (errno == EINTR) continue;
      return;
    }
    p += w;
    n -= static_cast<std::size_t>(w);
  }
}

void crash_write_queue(const logger::state& s, const log_queue& q, int fd) noexcept {
  log_buffer* b = q.crash_buf.load(std::memory_order_acquire);
  if (!b) return;
  std::uint64_t pos = b->head.load(std::memory_order_acquire);
  char line[4096];
  while (b) {
    const std::uint64_t tail = b->tail.load(std::memory_order_acquire);
    while (pos < tail) {
      const std::size_t off = pos & b->mask;
      const auto* r = reinterpret_cast<const log_record*>(b->data + off);
      if (r->size == 0) {
        pos += b->capacity - off;
        continue;
      }
      if (r->dropped) {
        const std::size_t n =
            fmt::format_to_n(line, sizeof line, fmt::runtime(drop_format), r->dropped).size;
        write_all(fd, line, std::min(n, sizeof line));
      }
      std::size_t at = 0;
      if (r->timestamp) at = format_stamp(line, s.stamp_ns(r->timestamp), s.precise_stamps());
      detail::log_output out;
      out.buf = line + at;
      out.capacity = sizeof line - at;
      try {
        r->decode(reinterpret_cast<const std::byte*>(r + 1), r->format, r->format_size, out);
        write_all(fd, line, at + std::min(out.size, out.capacity));
      } catch (...) {
      }
      pos += r->size;
    }
    b = b->next.load(std::memory_order_acquire);
    pos = 0;
  }
}

std::atomic<bool> crash_written{false};

void on_crash(int signo) noexcept {
  const int saved_errno = errno;
  // Once: a fault that comes back (the instruction runs again, or a
  // sanitizer's handler calls this one again) or a second thread's crash
  // must not write the lines twice.
  for (auto& slot : crash_written.exchange(true) ? std::span<std::atomic<logger::state*>>() : std::span(crash_loggers)) {
    const logger::state* s = slot.load(std::memory_order_acquire);
    if (!s) continue;
    int fd = s->options.crash_fd;
    bool opened = false;
    if (!s->options.crash_path.empty()) {
      fd = ::open(s->options.crash_path.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
      opened = fd >= 0;
    }
    if (fd < 0) continue;
    for (const log_queue* q = s->queues.load(std::memory_order_acquire); q; q = q->next_queue)
      crash_write_queue(*s, *q, fd);
    if (opened) ::close(fd);
  }
  errno = saved_errno;
  // SA_RESETHAND gave the signal its default action back: raised again, it
  // is delivered once this handler returns (a fault would come back anyway).
  ::signal(signo, SIG_DFL);
  ::raise(signo);
}

}  // namespace

}  // namespace sluice
