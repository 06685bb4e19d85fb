#include "sluice/kafka/kafka_writable.h"

#include <cstdint>
#include <new>
#include <utility>

#include "sluice/base/assert.h"
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
    : typed_writable(std::move(sink), with_defaults(options)),
      direct_(!options.object_mode && !options.max_buffered) {}

bool kafka_writable::write(std::string_view chunk, write_cb&& cb) {
  if (write_direct(chunk, cb)) [[likely]]
    return true;
  return write_through(chunk, cb);
}

// Out of line: writable::write() inlines its own fast path, whose registers
// would otherwise be saved on every call of write() above.
[[gnu::noinline]] bool kafka_writable::write_through(std::string_view chunk, write_cb& cb) {
  return writable::write(chunk, std::move(cb));
}

// A write to an idle stream: writable::write() would copy the chunk into a
// request, hand it to the sink at once (write_now()), hear it completed
// inside that call with its callback taken (kafka_sink::produce()), and
// release the request: ~600 instructions a message (perf/kafka_bench under
// callgrind), many of them the stream's arena block and request slab going
// back to their pools and coming out again, since each write leaves the
// stream empty. The stream's
// state is the same before and after, so the message goes to the sink
// directly instead. The test is the stream's own (write_or_buffer()'s and
// write_slow()'s): nothing in flight or buffered, not corked, ended,
// destroyed or errored; nor object mode (callbacks wait a tick), max_buffered
// (every write is counted), or a 'drain' or after_write() still owed, where
// the stream has a step to take. Any other case, and every outcome but
// success, goes through the stream, as before.
bool kafka_writable::write_direct(std::string_view chunk, write_cb& cb) {
  namespace wf = detail::wflag;
  SLUICE_ASSERT_THREAD(state_.owner_thread, "kafka_writable::write()");
  constexpr std::uint32_t busy = wf::writing | wf::buffered | wf::buffer_processing | wf::corked | wf::coalescing |
                                 wf::need_drain | wf::after_write_pending | wf::ending | wf::destroyed |
                                 wf::errored | wf::constructed;
  if ((state_.flags & busy) != wf::constructed || state_.length != 0 || !direct_) return false;
  return get_sink().produce_direct(chunk, cb);
}

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
