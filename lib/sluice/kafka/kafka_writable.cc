#include "sluice/kafka/kafka_writable.h"

#include <new>
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

kafka_writable::kafka_writable(std::unique_ptr<kafka_sink> sink, const writable_options& options)
    : typed_writable(std::move(sink), with_defaults(options)) {}

bool kafka_writable::produce(std::string_view key, std::string_view value, std::span<const kafka_header> headers,
                             write_cb cb) {
  if (!get_sink().framed())
    throw stream_error(std::make_error_code(std::errc::invalid_argument),
                       "produce() needs a stream made with kafka_options::framed");
  // The frame is built here and copied into the stream's buffer by write():
  // the scratch string keeps its capacity, so a message allocates nothing.
  thread_local std::string frame;
  frame.clear();
  encode_kafka_message(frame, key, value, headers);
  return write(std::string_view(frame), std::move(cb));
}

std::unique_ptr<kafka_writable> make_kafka_writable(const kafka_options& options,
                                                    const writable_options& stream_options) {
  return std::make_unique<kafka_writable>(kafka_sink::open(options), stream_options);
}

std::unique_ptr<kafka_writable> make_kafka_writable(const kafka_options& options, const writable_options& stream_options,
                                                    std::error_code& ec) noexcept {
  auto sink = kafka_sink::open(options, ec);
  if (!sink) return nullptr;
  try {
    return std::make_unique<kafka_writable>(std::move(sink), stream_options);
  } catch (const std::bad_alloc&) {
    ec = std::make_error_code(std::errc::not_enough_memory);
  }
  return nullptr;
}

}  // namespace sluice
