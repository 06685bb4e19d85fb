// kafka_sink: a sink whose chunks are messages to a Kafka topic, produced by
// librdkafka; each write's callback is that message's delivery report.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <system_error>
#include <utility>
#include <vector>

#include "sluice/sinks/sink.h"

// librdkafka's handles, declared as rdkafka.h declares them, so that this
// header does not bring rdkafka.h to its users.
struct rd_kafka_s;
struct rd_kafka_topic_s;
struct rd_kafka_queue_s;

namespace sluice {

/// A Kafka message header: a name and a value (bytes).
struct kafka_header {
  std::string_view name;
  std::string_view value;
};

struct kafka_options {
  /// The topic every message goes to.
  std::string topic;
  /// librdkafka's configuration properties, applied in order
  /// (CONFIGURATION.md of librdkafka): at least "bootstrap.servers". The
  /// loss window depends on "acks" (librdkafka's default: all) and
  /// "enable.idempotence"; a message's deadline is "message.timeout.ms"
  /// (default 300000), librdkafka's queue "queue.buffering.max.messages"
  /// and "queue.buffering.max.kbytes".
  std::vector<std::pair<std::string, std::string>> config;
  /// The partition of every message; -1 (RD_KAFKA_PARTITION_UA) lets the
  /// configured partitioner choose (by key, when there is one).
  std::int32_t partition = -1;
  /// Every chunk is a frame made by encode_kafka_message() (key, headers
  /// and value) instead of a bare value. produce() needs it.
  bool framed = false;
  /// A message the broker refuses for what it is (its delivery report
  /// carries MSG_SIZE_TOO_LARGE, INVALID_RECORD, INVALID_MSG,
  /// RECORD_LIST_TOO_LARGE, INVALID_TIMESTAMP or POLICY_VIOLATION, or
  /// librdkafka refuses it at produce time as larger than
  /// "message.max.bytes"): false (the default) destroys the stream with
  /// that error, as any failed delivery; true fails that message's callback
  /// alone and the stream goes on, as relp_writable does with a refusal
  /// (a relay answers its sender with an error). Other failures (a timeout,
  /// a fatal error) destroy the stream either way.
  bool refusals_fail_alone = false;
};

/// Whether a delivery report's error says the broker refused the message
/// itself (see kafka_options::refusals_fail_alone).
bool is_kafka_refusal(std::error_code ec) noexcept;

/// Appends to `out` the frame that a framed kafka_sink turns back into a
/// message with this key, value and headers. An empty key is no key.
void encode_kafka_message(std::string& out, std::string_view key, std::string_view value,
                          std::span<const kafka_header> headers = {});

/// A sink over a librdkafka producer (most often made by
/// make_kafka_writable(), see kafka/kafka_writable.h, which puts a
/// kafka_writable over it).
///
/// Each chunk is one message, handed to librdkafka (which copies it) inside
/// write(): the stream's write completes there, so the next chunk follows at
/// once, and the write's callback is taken out of the stream
/// (write_done::take_callback()) to be called with the message's delivery
/// report: success once the broker acknowledged it as "acks" asks, or the
/// error that made librdkafka give it up.
///
/// When librdkafka's queue is full (RD_KAFKA_RESP_ERR__QUEUE_FULL) the write
/// stays in flight: later chunks wait in the stream, whose write() returns
/// false past its high-water mark, and the chunk is produced again when
/// delivery reports have made room; then the stream goes on and emits
/// 'drain'. Nothing is dropped.
///
/// Delivery reports and librdkafka's errors are read on the stream's loop:
/// librdkafka writes to an eventfd when its queue of reports becomes
/// non-empty (rd_kafka_queue_io_event_enable), and the loop watches that fd
/// while messages are in flight (so an idle producer lets loop::run()
/// return). The caller's thread never waits for the network.
///
/// A failed delivery report, or a fatal librdkafka error, destroys the
/// stream with that error. destroy() purges what librdkafka still holds
/// (rd_kafka_purge): those messages' callbacks get _PURGE_QUEUE (never
/// sent) or _PURGE_INFLIGHT (sent, outcome unknown) from the loop, on its
/// next turn, broker or none; one that librdkafka did not report by then
/// gets ERR_STREAM_DESTROYED, and its late report is dropped. The
/// stream's final (end()) waits for every delivery report, so 'finish'
/// means every message was acknowledged.
class kafka_sink : public sink {
 public:
  /// Makes the producer. Throws stream_error (librdkafka's text in what())
  /// for a bad configuration.
  static std::unique_ptr<kafka_sink> open(const kafka_options& options);
  /// The non-throwing twin: null, and `ec` says why (librdkafka's text,
  /// which names the property it refused, is in the throwing form's what()).
  static std::unique_ptr<kafka_sink> open(const kafka_options& options, std::error_code& ec) noexcept;
  ~kafka_sink() override;
  kafka_sink(const kafka_sink&) = delete;
  kafka_sink& operator=(const kafka_sink&) = delete;

  void attach(loop& l) override;
  void write(std::string_view chunk, write_done done) override;
  void final(final_done done) override;
  void destroy(std::error_code err, destroy_done destroyed) noexcept override;

  /// Messages handed to librdkafka whose delivery report has not come yet.
  std::size_t in_flight() const noexcept { return in_flight_; }
  /// Whether a chunk waits for room in librdkafka's queue.
  bool waiting_for_room() const noexcept { return stalled_.has_value(); }
  bool framed() const noexcept { return framed_; }
  /// The librdkafka producer (an rd_kafka_t*), for what this class does not
  /// offer (statistics, metadata). Do not poll its main queue: the sink
  /// reads it.
  rd_kafka_s* handle() const noexcept { return rk_; }

 private:
  // kafka_writable's direct path (produce_direct()) skips the stream's
  // request for a message that librdkafka takes at once.
  friend class kafka_writable;
  struct slot;
  struct slot_pool;
  struct vu_buffer;
  struct stalled_write {
    std::string_view chunk;
    write_done done;
  };

  kafka_sink() noexcept;  // then init(): made by open() only
  bool init(const kafka_options& options, std::error_code& ec, std::string* why);
  bool produce(std::string_view chunk, write_done done);
  bool produce_direct(std::string_view chunk, write_cb& cb);
  int hand_over(std::string_view chunk, slot* s);
  bool not_produced(std::string_view chunk, write_done done, slot* s, int err);
  int produce_framed(std::string_view frame, slot* s);
  void wake() noexcept;
  void arm();
  void serve();
  std::error_code settle_reports();
  void retry_stalled();
  void purge() noexcept;

  rd_kafka_s* rk_ = nullptr;
  rd_kafka_topic_s* rkt_ = nullptr;
  rd_kafka_queue_s* reports_ = nullptr;  // the main queue: delivery reports, errors
  int event_fd_ = -1;
  loop* loop_ = nullptr;
  std::int32_t partition_ = -1;
  bool framed_ = false;
  bool refusals_fail_alone_ = false;
  bool armed_ = false;      // a watch on event_fd_ is queued
  bool destroyed_ = false;  // destroy() was called
  bool purged_ = false;     // destroy() purged librdkafka: every report it owes is queued
  bool serving_ = false;    // inside serve(): its end re-arms
  std::size_t in_flight_ = 0;
  std::unique_ptr<slot_pool> slots_;
  std::optional<stalled_write> stalled_;
  std::optional<final_done> final_;
  std::unique_ptr<vu_buffer> vus_;
};

}  // namespace sluice
