// kafka_writable: a writable over a kafka_sink in one call, and produce(),
// which writes a message with a key and headers to it.
// The top layer: it knows the streams (stream/) and the sink (kafka/).
#pragma once

#include <initializer_list>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <system_error>

#include "sluice/kafka/kafka_sink.h"
#include "sluice/stream/writable.h"

namespace sluice {

/// A writable over a new kafka_sink: each chunk is one message to
/// `options.topic`, and each write's callback is its delivery report (see
/// kafka_sink). Unless `stream_options` sets one, the high-water mark is one
/// byte: write() returns false exactly when a message waits in the stream
/// because librdkafka's queue is full, and 'drain' follows when delivery
/// reports have made room for everything that waited. end() flushes:
/// 'finish' comes after every delivery report. Throws stream_error for a bad
/// configuration.
///
///     auto out = sluice::make_kafka_writable(
///         {.topic = "logs", .config = {{"bootstrap.servers", "kafka1:9092"}, {"acks", "all"}}});
///     out->write("one message", [](std::error_code ec) { /* its delivery report */ });
///     out->end();
///     sluice::loop::current().run();
std::unique_ptr<writable> make_kafka_writable(const kafka_options& options, const writable_options& stream_options = {});
/// The non-throwing twin: null, `ec` set (and librdkafka's text in `why`, if
/// given) on failure.
std::unique_ptr<writable> make_kafka_writable(const kafka_options& options, const writable_options& stream_options,
                                              std::error_code& ec, std::string* why = nullptr) noexcept;

/// Writes one message with a key (empty: none) and headers to a stream made
/// with kafka_options::framed; otherwise exactly write(value, cb). Throws
/// stream_error (EINVAL) for any other stream.
///
///     sluice::produce(*out, "user-42", line, {{"host", "web1"}}, [](std::error_code ec) { ... });
bool produce(writable& stream, std::string_view key, std::string_view value, std::span<const kafka_header> headers,
             write_cb cb = {});
bool produce(writable& stream, std::string_view key, std::string_view value, write_cb cb = {});
inline bool produce(writable& stream, std::string_view key, std::string_view value,
                    std::initializer_list<kafka_header> headers, write_cb cb = {}) {
  return produce(stream, key, value, std::span<const kafka_header>(headers.begin(), headers.size()), std::move(cb));
}

}  // namespace sluice
