// sluice-log-kafka.so: see log_kafka.h.
#include "log_kafka.h"

#include <exception>
#include <string>
#include <utility>

#include "sluice/kafka/kafka_writable.h"

extern "C" sluice::writable* sluice_log_make_kafka(const sluice::kafka_options* options, std::string* why) {
  // The throwing form: its what() carries librdkafka's text (the property
  // it refused), which the non-throwing twin's error code cannot.
  try {
    return sluice::make_kafka_writable(*options).release();
  } catch (const std::exception& e) {
    *why = e.what();
  }
  return nullptr;
}

extern "C" bool sluice_log_kafka_produce(sluice::writable* out, std::string_view key, std::string_view value,
                                         sluice::write_cb* cb) {
  // The module made `out` (sluice_log_make_kafka()): it is a kafka_writable.
  return static_cast<sluice::kafka_writable*>(out)->produce(key, value, std::move(*cb));
}

extern "C" bool sluice_log_kafka_refused(const std::error_code* ec) { return sluice::is_kafka_refusal(*ec); }
