// sluice-log-kafka.so: see log_kafka.h.
#include "log_kafka.h"

#include <exception>
#include <string>

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
