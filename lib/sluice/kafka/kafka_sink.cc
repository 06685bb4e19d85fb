#include "sluice/kafka/kafka_sink.h"

#include <librdkafka/rdkafka.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <limits>

#include "sluice/base/errors.h"
#include "sluice/kafka/kafka_error.h"
#include "sluice/loop/loop.h"

namespace sluice {

namespace {
// produce_framed()'s answer for a malformed frame: no rd_kafka_resp_err_t
// (librdkafka's own errors are negative too, _QUEUE_FULL among them).
constexpr int malformed_frame = std::numeric_limits<int>::min();

// Made once: a default std::error_code calls std::system_category() out of
// line, a call every message would pay twice (its write, its report).
const std::error_code no_error{};
}  // namespace

bool is_kafka_refusal(std::error_code ec) noexcept {
  if (ec.category() != kafka_category()) return false;
  switch (ec.value()) {
    case RD_KAFKA_RESP_ERR_MSG_SIZE_TOO_LARGE:
    case RD_KAFKA_RESP_ERR_INVALID_RECORD:
    case RD_KAFKA_RESP_ERR_INVALID_MSG:
    case RD_KAFKA_RESP_ERR_RECORD_LIST_TOO_LARGE:
    case RD_KAFKA_RESP_ERR_INVALID_TIMESTAMP:
    case RD_KAFKA_RESP_ERR_POLICY_VIOLATION:
      return true;
    default:
      return false;
  }
}

// ---- the frame of a keyed message (kafka_options::framed)
//
// u32 key size, key, u32 header count, per header (u32 name size, name,
// u32 value size, value), then the value up to the end of the chunk. Sizes
// are in the host's byte order: a frame never leaves the process.

namespace {
void put_u32(std::string& out, std::size_t n) {
  const auto v = static_cast<std::uint32_t>(n);
  out.append(reinterpret_cast<const char*>(&v), sizeof v);
}

// Reads a u32 size and that many bytes; false if the frame is too short.
bool take(std::string_view& in, std::string_view& field) noexcept {
  std::uint32_t n;
  if (in.size() < sizeof n) return false;
  std::memcpy(&n, in.data(), sizeof n);
  in.remove_prefix(sizeof n);
  if (in.size() < n) return false;
  field = in.substr(0, n);
  in.remove_prefix(n);
  return true;
}
}  // namespace

void encode_kafka_message(std::string& out, std::string_view key, std::string_view value,
                          std::span<const kafka_header> headers) {
  put_u32(out, key.size());
  out.append(key);
  put_u32(out, headers.size());
  for (const kafka_header& h : headers) {
    put_u32(out, h.name.size());
    out.append(h.name);
    put_u32(out, h.value.size());
    out.append(h.value);
  }
  out.append(value);
}

// ---- the callbacks of the messages librdkafka holds

// A message's callback, from the produce to its delivery report; librdkafka
// carries its address as the message's opaque.
struct kafka_sink::slot {
  write_cb cb;
  slot* next_free = nullptr;
  bool in_use = false;
};

// Slots in blocks that are never freed before the sink: after warm-up, a
// message costs no allocation of sluice's own.
struct kafka_sink::slot_pool {
  static constexpr std::size_t block_size = 1024;
  std::vector<std::unique_ptr<slot[]>> blocks;
  slot* free = nullptr;

  slot* acquire() {
    if (!free) [[unlikely]]
      grow();
    slot* s = free;
    free = s->next_free;
    s->in_use = true;
    return s;
  }
  [[gnu::noinline]] void grow() {
    // new[] without (): make_unique<slot[]> would zero each block's 48 KiB
    // first, though the constructors and the loop below set every field that
    // is read (perf/kafka_bench fills librdkafka's queue of 100,000 messages:
    // 98 blocks, and the memset was 24 instructions a message of its run).
    blocks.emplace_back(new slot[block_size]);
    slot* b = blocks.back().get();
    for (std::size_t i = 0; i < block_size; ++i) b[i].next_free = i + 1 < block_size ? &b[i + 1] : nullptr;
    free = b;
  }
  void release(slot* s) noexcept {
    s->in_use = false;
    s->next_free = free;
    free = s;
  }
  // Unlinks, then calls back: the callback may write again.
  void settle(slot* s, std::error_code ec) noexcept {
    write_cb cb = std::move(s->cb);
    release(s);
    if (cb) cb(ec);
  }
  // The slots whose report never came (the destructor's last resort).
  void settle_all(std::error_code ec) noexcept {
    for (auto& block : blocks)
      for (std::size_t i = 0; i < block_size; ++i)
        if (block[i].in_use) settle(&block[i], ec);
  }
};

// produce_framed()'s argument array: one entry per field and header.
struct kafka_sink::vu_buffer {
  std::vector<rd_kafka_vu_t> vus;
};

// ---- making the producer

std::unique_ptr<kafka_sink> kafka_sink::open(const kafka_options& options) {
  std::unique_ptr<kafka_sink> s(new kafka_sink);
  std::error_code ec;
  std::string why;
  if (!s->init(options, ec, &why)) throw stream_error(ec, "kafka_sink: " + why);
  return s;
}

std::unique_ptr<kafka_sink> kafka_sink::open(const kafka_options& options, std::error_code& ec) noexcept {
  ec.clear();
  try {
    std::unique_ptr<kafka_sink> s(new kafka_sink);
    if (s->init(options, ec, nullptr)) return s;
  } catch (const std::bad_alloc&) {
    ec = std::make_error_code(std::errc::not_enough_memory);
  }
  return nullptr;
}

// Not noexcept: its allocations may throw, and open()'s twin catches them
// (a noexcept here would turn std::bad_alloc into std::terminate).
bool kafka_sink::init(const kafka_options& options, std::error_code& ec, std::string* why) {
  char errstr[512] = "";
  auto fail = [&](int err, const char* text) {
    ec = make_kafka_error(err);
    if (why) *why = text;
    return false;
  };
  slots_ = std::make_unique<slot_pool>();
  vus_ = std::make_unique<vu_buffer>();
  partition_ = options.partition;
  framed_ = options.framed;
  refusals_fail_alone_ = options.refusals_fail_alone;
  if (options.topic.empty()) return fail(RD_KAFKA_RESP_ERR__INVALID_ARG, "no topic");

  rd_kafka_conf_t* conf = rd_kafka_conf_new();
  for (const auto& [name, value] : options.config) {
    if (rd_kafka_conf_set(conf, name.c_str(), value.c_str(), errstr, sizeof errstr) != RD_KAFKA_CONF_OK) {
      rd_kafka_conf_destroy(conf);
      return fail(RD_KAFKA_RESP_ERR__INVALID_ARG, errstr);
    }
  }
  // Reports and errors as events on the main queue, read by serve(), rather
  // than callbacks from inside rd_kafka_poll(): a write callback may then
  // destroy the stream (and purge the producer), which librdkafka forbids
  // from inside its own callbacks.
  rd_kafka_conf_set_events(conf, RD_KAFKA_EVENT_DR | RD_KAFKA_EVENT_ERROR);
  rk_ = rd_kafka_new(RD_KAFKA_PRODUCER, conf, errstr, sizeof errstr);
  if (!rk_) {
    rd_kafka_conf_destroy(conf);
    return fail(RD_KAFKA_RESP_ERR__INVALID_ARG, errstr);
  }
  rkt_ = rd_kafka_topic_new(rk_, options.topic.c_str(), nullptr);
  if (!rkt_) return fail(rd_kafka_last_error(), rd_kafka_err2str(rd_kafka_last_error()));
  reports_ = rd_kafka_queue_get_main(rk_);
  event_fd_ = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (event_fd_ < 0) {
    ec = {errno, std::system_category()};
    if (why) *why = "eventfd";
    return false;
  }
  // librdkafka writes this to the fd when a report arrives in an empty
  // queue; an eventfd takes 8-byte counts.
  static const std::uint64_t one = 1;
  rd_kafka_queue_io_event_enable(reports_, event_fd_, &one, sizeof one);
  // librdkafka writes the fd only when an event lands in an empty queue. An
  // event queued before the fd was set (a refused connection is reported
  // within microseconds of rd_kafka_new()) would leave the queue non-empty
  // for good, and no later report would wake the loop: wake it for that one.
  if (rd_kafka_queue_length(reports_) > 0) wake();
  return true;
}

kafka_sink::kafka_sink() noexcept : sink({.final = true}) {}

kafka_sink::~kafka_sink() {
  if (loop_) loop_->cancel(this);
  if (rk_) {
    // Whatever librdkafka still holds is purged, and its reports read here:
    // the stream is going, so nobody will poll for them later.
    if (in_flight_ > 0) {
      purge();
      settle_reports();
    }
    slots_->settle_all(make_error_code(errc::destroyed));
    if (reports_) {
      rd_kafka_queue_io_event_enable(reports_, -1, nullptr, 0);
      rd_kafka_queue_destroy(reports_);
    }
    if (rkt_) rd_kafka_topic_destroy(rkt_);
    rd_kafka_destroy(rk_);
  }
  if (event_fd_ >= 0) {
    if (loop_) loop_->forget_fd(event_fd_);
    ::close(event_fd_);
  }
}

void kafka_sink::attach(loop& l) {
  loop_ = &l;
  armed_ = false;  // a watch on another loop is gone with it
  if (in_flight_ > 0) arm();
}

// ---- writing

void kafka_sink::write(std::string_view chunk, write_done done) { produce(chunk, done); }

// Hands the message to librdkafka, which carries `s` as its opaque: returns
// librdkafka's error, or malformed_frame.
[[gnu::always_inline]] inline int kafka_sink::hand_over(std::string_view chunk, slot* s) {
  if (framed_) [[unlikely]]
    return produce_framed(chunk, s);
  // RD_KAFKA_MSG_F_COPY: the chunk lives in the stream's buffer, which
  // reuses it as soon as the write completes (produce()), or in the
  // caller's (produce_direct()). librdkafka copies the value into the allocation it
  // makes for the message anyway, so the copy costs a memcpy, not an
  // allocation. rd_kafka_produce(), not rd_kafka_producev(): the same
  // message for ~160 fewer instructions (1,136 against 1,297 under
  // callgrind, perf/kafka_bench).
  return rd_kafka_produce(rkt_, partition_, RD_KAFKA_MSG_F_COPY, const_cast<char*>(chunk.data()), chunk.size(),
                          nullptr, 0, s) == 0
             ? RD_KAFKA_RESP_ERR_NO_ERROR
             : rd_kafka_last_error();
}

// Hands one message to librdkafka. On success the write completes at once
// and the callback waits for the delivery report; when librdkafka's queue is
// full the write stays in flight until serve() has read reports. Returns
// false in that case.
bool kafka_sink::produce(std::string_view chunk, write_done done) {
  slot* s = slots_->acquire();
  const int err = hand_over(chunk, s);
  if (err == RD_KAFKA_RESP_ERR_NO_ERROR) [[likely]] {
    s->cb.assign_empty(done.take_callback());  // a free slot holds no callback
    ++in_flight_;
    if (!armed_) arm();
    done(no_error);
    return true;
  }
  return not_produced(chunk, done, s, err);
}

// kafka_writable's direct path: its stream is idle (nothing buffered or in
// flight), so the stream would hand this chunk to write() above at once and
// hear it completed there, leaving only the callback behind, in a slot. Here
// the callback goes to its slot without the stream's request around it.
// True when librdkafka took the message: `cb` now waits for its delivery
// report, exactly as a write's taken callback does. False, with nothing
// produced and `cb` untouched, for every other outcome (a full queue, a
// refusal, a malformed frame): the caller then writes through the stream,
// whose write() produces again and handles it, so that those outcomes have
// one path only.
bool kafka_sink::produce_direct(std::string_view chunk, write_cb& cb) {
  slot* s = slots_->acquire();
  if (hand_over(chunk, s) != RD_KAFKA_RESP_ERR_NO_ERROR) [[unlikely]] {
    slots_->release(s);
    return false;
  }
  s->cb.assign_empty(std::move(cb));
  ++in_flight_;
  if (!armed_) arm();
  return true;
}

// produce() when librdkafka did not take the message (`err`, or
// malformed_frame). Out of line, so that the hot path stays short.
[[gnu::noinline]] bool kafka_sink::not_produced(std::string_view chunk, write_done done, slot* s, int err) {
  if (err == malformed_frame) {
    slots_->release(s);
    done(std::make_error_code(std::errc::invalid_argument));
    return true;
  }
  // With nothing in flight no report will make room: the message can never
  // fit, and fails like any other.
  if (err == RD_KAFKA_RESP_ERR__QUEUE_FULL && in_flight_ > 0) {
    slots_->release(s);
    stalled_.emplace(stalled_write{chunk, done});
    arm();
    return false;
  }
  const std::error_code ec = make_kafka_error(err);
  if (refusals_fail_alone_ && loop_ && is_kafka_refusal(ec)) {
    // The stream goes on: its write succeeds, and the message's callback,
    // kept in its slot, hears the refusal on the next tick (never inside
    // write()).
    s->cb.assign_empty(done.take_callback());
    loop_->next_tick([this, s, err] { slots_->settle(s, make_kafka_error(err)); }, this);
    done(no_error);
    return true;
  }
  slots_->release(s);
  done(ec);
  return true;
}

// A framed chunk (see encode_kafka_message()): returns librdkafka's error,
// or malformed_frame.
int kafka_sink::produce_framed(std::string_view frame, slot* s) {
  std::string_view key;
  std::uint32_t count;
  if (!take(frame, key) || frame.size() < sizeof count) return malformed_frame;
  std::memcpy(&count, frame.data(), sizeof count);
  frame.remove_prefix(sizeof count);
  // The message takes the headers on success; rd_kafka_header_add() takes
  // sizes, where the RD_KAFKA_VTYPE_HEADER entry wants a NUL-terminated name.
  rd_kafka_headers_t* headers = nullptr;
  if (count > 0) {
    if (count > frame.size()) return malformed_frame;  // each header takes 8 bytes at least
    headers = rd_kafka_headers_new(count);
    for (std::uint32_t i = 0; i < count; ++i) {
      std::string_view name;
      std::string_view value;
      if (!take(frame, name) || !take(frame, value)) {
        rd_kafka_headers_destroy(headers);
        return malformed_frame;
      }
      rd_kafka_header_add(headers, name.data(), static_cast<ssize_t>(name.size()), value.data(),
                          static_cast<ssize_t>(value.size()));
    }
  }
  std::vector<rd_kafka_vu_t>& vus = vus_->vus;
  vus.clear();
  auto add = [&vus](rd_kafka_vtype_t type) -> rd_kafka_vu_t& {
    rd_kafka_vu_t& vu = vus.emplace_back();
    vu.vtype = type;
    return vu;
  };
  add(RD_KAFKA_VTYPE_RKT).u.rkt = rkt_;
  add(RD_KAFKA_VTYPE_PARTITION).u.i32 = partition_;
  add(RD_KAFKA_VTYPE_MSGFLAGS).u.i = RD_KAFKA_MSG_F_COPY;
  rd_kafka_vu_t& value = add(RD_KAFKA_VTYPE_VALUE);
  value.u.mem.ptr = const_cast<char*>(frame.data());
  value.u.mem.size = frame.size();
  if (!key.empty()) {
    rd_kafka_vu_t& k = add(RD_KAFKA_VTYPE_KEY);
    k.u.mem.ptr = const_cast<char*>(key.data());
    k.u.mem.size = key.size();
  }
  add(RD_KAFKA_VTYPE_OPAQUE).u.ptr = s;
  if (headers) add(RD_KAFKA_VTYPE_HEADERS).u.headers = headers;
  rd_kafka_error_t* error = rd_kafka_produceva(rk_, vus.data(), vus.size());
  if (!error) return RD_KAFKA_RESP_ERR_NO_ERROR;
  const int code = rd_kafka_error_code(error);
  rd_kafka_error_destroy(error);
  if (headers) rd_kafka_headers_destroy(headers);  // the message did not take them
  return code;
}

// Node: _final(cb). 'finish' waits for every delivery report.
void kafka_sink::final(final_done done) {
  if (in_flight_ == 0) {
    done();
    return;
  }
  final_.emplace(done);
  arm();
}

// ---- the loop's side: delivery reports

// Makes the eventfd readable, as librdkafka does for a report.
void kafka_sink::wake() noexcept {
  const std::uint64_t one = 1;
  [[maybe_unused]] const ssize_t n = ::write(event_fd_, &one, sizeof one);
}

void kafka_sink::arm() {
  if (armed_ || !loop_) return;
  armed_ = true;
  loop_->watch(event_fd_, POLLIN, [this](short) { serve(); }, this);
}

// The eventfd is readable: reads every report and
// error, retries the chunk that waits for room, completes the final when
// nothing is left in flight, and watches again while something is.
void kafka_sink::serve() {
  armed_ = false;
  std::uint64_t count;
  // Read before polling: a report that lands after the poll finds the count
  // at zero and wakes us again.
  [[maybe_unused]] const ssize_t n = ::read(event_fd_, &count, sizeof count);
  const std::error_code failed = settle_reports();
  if (purged_ && in_flight_ > 0) {
    // rd_kafka_purge() queues the report of every message it takes back
    // before it returns, and settle_reports() has read them all: a message
    // still in flight was not reported and will not be. Its callback hears
    // that the stream was destroyed; a report that comes anyway finds its
    // slot free and is dropped (settle_reports()).
    in_flight_ = 0;
    slots_->settle_all(make_error_code(errc::destroyed));
  }
  if (failed && !destroyed_) report_error(failed);  // destroys the stream: see destroy()
  if (!destroyed_) retry_stalled();
  if (final_ && in_flight_ == 0 && !stalled_) {
    const final_done done = *final_;
    final_.reset();
    done(destroyed_ ? make_error_code(errc::destroyed) : std::error_code{});
  }
  if (in_flight_ > 0 || stalled_) arm();
}

// Calls back every message whose report has come. Returns the first failure
// (a message librdkafka gave up on, or a fatal error), for the stream.
std::error_code kafka_sink::settle_reports() {
  std::error_code failed;
  while (rd_kafka_event_t* ev = rd_kafka_queue_poll(reports_, 0)) {
    switch (rd_kafka_event_type(ev)) {
      case RD_KAFKA_EVENT_DR:
        while (const rd_kafka_message_t* m = rd_kafka_event_message_next(ev)) {
          slot* s = static_cast<slot*>(m->_private);
          if (!s->in_use) continue;  // settled after the purge (see serve()); no slot is reused then
          --in_flight_;
          if (m->err == RD_KAFKA_RESP_ERR_NO_ERROR) [[likely]] {
            slots_->settle(s, no_error);
          } else {
            const std::error_code ec = make_kafka_error(m->err);
            if (!failed && !(refusals_fail_alone_ && is_kafka_refusal(ec))) failed = ec;
            slots_->settle(s, ec);
          }
        }
        break;
      case RD_KAFKA_EVENT_ERROR:
        // Other errors (a broker down, all brokers down) are librdkafka's to
        // retry; its messages fail when "message.timeout.ms" runs out.
        if (rd_kafka_event_error_is_fatal(ev) && !failed) {
          char why[256];
          failed = make_kafka_error(rd_kafka_fatal_error(rk_, why, sizeof why));
        }
        break;
      default:
        break;
    }
    rd_kafka_event_destroy(ev);
  }
  return failed;
}

// Reports made room: produce the waiting chunk again. Its write completes
// now (or waits again), and the stream hands over what it buffered meanwhile.
void kafka_sink::retry_stalled() {
  if (!stalled_) return;
  const stalled_write w = *stalled_;
  stalled_.reset();
  produce(w.chunk, w.done);
}

void kafka_sink::purge() noexcept { rd_kafka_purge(rk_, RD_KAFKA_PURGE_F_QUEUE | RD_KAFKA_PURGE_F_INFLIGHT); }

// Node: _destroy(err, cb). Purges what librdkafka holds; the reports of the
// purged messages (_PURGE_QUEUE, _PURGE_INFLIGHT) are in the queue when
// rd_kafka_purge() returns, and the watch is woken here rather than left to
// librdkafka, so that serve() calls them back on the loop's next turn, never
// inside destroy(), and settles what was not reported. A chunk waiting for
// room was never produced: its write fails with ERR_STREAM_DESTROYED.
void kafka_sink::destroy(std::error_code err, destroy_done destroyed) noexcept {
  destroyed_ = true;
  if (!loop_) {
    destroyed(err);
    return;
  }
  if (stalled_) {
    const write_done done = stalled_->done;
    stalled_.reset();
    loop_->next_tick([done] { done(make_error_code(errc::destroyed)); }, this);
  }
  if (in_flight_ > 0) {
    purge();
    purged_ = true;
    wake();
    arm();
  }
  destroyed(err);
}

}  // namespace sluice
