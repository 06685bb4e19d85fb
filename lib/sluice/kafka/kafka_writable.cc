#include "sluice/kafka/kafka_writable.h"

#include <utility>

#include "sluice/base/errors.h"

namespace sluice {

namespace {
writable_options with_defaults(writable_options options) {
  // One byte: any message left in the stream means librdkafka's queue was
  // full; write() says so at once.
  if (!options.high_water_mark) options.high_water_mark = 1;
  return options;
}
}  // namespace

std::unique_ptr<writable> make_kafka_writable(const kafka_options& options, const writable_options& stream_options) {
  return std::make_unique<writable>(std::make_unique<kafka_sink>(options), with_defaults(stream_options));
}

std::unique_ptr<writable> make_kafka_writable(const kafka_options& options, const writable_options& stream_options,
                                              std::error_code& ec, std::string* why) noexcept {
  try {
    ec.clear();
    auto sink = std::make_unique<kafka_sink>(options, ec, why);
    if (ec) return nullptr;
    return std::make_unique<writable>(std::move(sink), with_defaults(stream_options));
  } catch (const std::bad_alloc&) {
    ec = std::make_error_code(std::errc::not_enough_memory);
    return nullptr;
  }
}

bool produce(writable& stream, std::string_view key, std::string_view value, std::span<const kafka_header> headers,
             write_cb cb) {
  const auto* sink = dynamic_cast<const kafka_sink*>(&stream.get_sink());
  if (!sink || !sink->framed())
    throw stream_error(std::make_error_code(std::errc::invalid_argument),
                       "produce() needs a stream made with kafka_options::framed");
  // The frame is built here and copied into the stream's buffer by write():
  // the scratch string keeps its capacity, so a message allocates nothing.
  thread_local std::string frame;
  frame.clear();
  encode_kafka_message(frame, key, value, headers);
  return stream.write(std::string_view(frame), std::move(cb));
}

bool produce(writable& stream, std::string_view key, std::string_view value, write_cb cb) {
  return produce(stream, key, value, std::span<const kafka_header>{}, std::move(cb));
}

}  // namespace sluice
