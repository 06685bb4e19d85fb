// kafka_writable: the typed handle over a kafka_sink, made in one call by
// make_kafka_writable(); its produce() writes a message with a key and
// headers.
// The top layer: it knows the streams (stream/) and the sink (kafka/).
#pragma once

#include <initializer_list>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <system_error>

#include "sluice/kafka/kafka_sink.h"
#include "sluice/stream/typed_stream.h"

namespace sluice {

/// A writable over a kafka_sink that knows its sink: each chunk is one
/// message to the sink's topic, each write's callback its delivery report
/// (see kafka_sink), and get_sink() gives the kafka_sink itself
/// (in_flight(), handle()) without a cast.
class kafka_writable : public typed_writable<kafka_sink> {
 public:
  /// Unless `options` sets one, the high-water mark is one byte: write()
  /// returns false exactly when a message waits in the stream because
  /// librdkafka's queue is full.
  explicit kafka_writable(std::unique_ptr<kafka_sink> sink, const writable_options& options = {});

  /// As writable::write(): the message is the chunk, the callback its
  /// delivery report. Through this type (not through a `writable&`), a
  /// write that finds the stream idle goes to librdkafka without a request
  /// of the stream's: the same outcome for fewer instructions, since
  /// librdkafka copies the message and the callback waits for the delivery
  /// report either way (docs/benchmarks.md, "Kafka, round 4").
  bool write(std::string_view chunk, write_cb&& cb);
  bool write(std::string_view chunk) { return write(chunk, write_cb{}); }
  bool write(const char* chunk, write_cb cb = {}) { return write(std::string_view(chunk), std::move(cb)); }
  /// The string is not kept: librdkafka copies it, or the stream takes it.
  bool write(std::string&& chunk, write_cb cb = {}) {
    if (write_direct(chunk, cb)) return true;
    return writable::write(std::move(chunk), std::move(cb));
  }
  using writable::write;  // the other overloads, through the stream

  /// Writes one message with a key (empty: none) and headers; the stream
  /// must be made with kafka_options::framed (throws stream_error, EINVAL,
  /// otherwise). Otherwise as write(value, cb): the callback is the
  /// message's delivery report, the result says whether there is room.
  ///
  ///     out->produce("user-42", line, {{"host", "web1"}}, [](std::error_code ec) { ... });
  bool produce(std::string_view key, std::string_view value, std::span<const kafka_header> headers, write_cb cb = {});
  bool produce(std::string_view key, std::string_view value, write_cb cb = {}) {
    return produce(key, value, std::span<const kafka_header>{}, std::move(cb));
  }
  bool produce(std::string_view key, std::string_view value, std::initializer_list<kafka_header> headers,
               write_cb cb = {}) {
    return produce(key, value, std::span<const kafka_header>(headers.begin(), headers.size()), std::move(cb));
  }

 private:
  bool write_direct(std::string_view chunk, write_cb& cb);
  bool write_through(std::string_view chunk, write_cb& cb);

  bool direct_ = false;  // neither object mode nor max_buffered: see write_direct()
};

/// A kafka_writable over a new kafka_sink: each chunk is one message to
/// `options.topic`. 'drain' follows when delivery reports have made room
/// for everything that waited; end() flushes: 'finish' comes after every
/// delivery report. Throws stream_error for a bad configuration
/// (librdkafka's text in what()).
///
///     auto out = sluice::make_kafka_writable(
///         {.topic = "logs", .config = {{"bootstrap.servers", "kafka1:9092"}, {"acks", "all"}}});
///     out->write("one message", [](std::error_code ec) { /* its delivery report */ });
///     out->end();
///     sluice::loop::current().run();
std::unique_ptr<kafka_writable> make_kafka_writable(const kafka_options& options,
                                                    const writable_options& stream_options = {});
/// The non-throwing twin: null, and `ec` says why.
std::unique_ptr<kafka_writable> make_kafka_writable(const kafka_options& options, const writable_options& stream_options,
                                                    std::error_code& ec) noexcept;

}  // namespace sluice
