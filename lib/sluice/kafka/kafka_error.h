// kafka_error: librdkafka's error codes (rd_kafka_resp_err_t) as
// std::error_code, so that they reach write callbacks and 'error' as every
// other error of a stream does.
#pragma once

#include <system_error>

namespace sluice {

/// The category of librdkafka's errors; its name() is "rdkafka". message()
/// gives librdkafka's name for the code and its text, e.g.
/// "_MSG_TIMED_OUT: Local: Message timed out" or
/// "NOT_ENOUGH_REPLICAS: Broker: Not enough in-sync replicas".
const std::error_category& kafka_category() noexcept;

/// `err` is an rd_kafka_resp_err_t. RD_KAFKA_RESP_ERR_NO_ERROR (0) gives no
/// error: a default std::error_code, equal to the one of a plain success.
inline std::error_code make_kafka_error(int err) noexcept {
  return err ? std::error_code{err, kafka_category()} : std::error_code{};
}

}  // namespace sluice
