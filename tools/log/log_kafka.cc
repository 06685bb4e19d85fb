// sluice-log-kafka.so: see log_kafka.h.
#include "log_kafka.h"

#include <system_error>

#include "sluice/kafka/kafka_writable.h"

extern "C" sluice::writable* sluice_log_make_kafka(const sluice::kafka_options* options, std::string* why) {
  std::error_code ec;
  auto out = sluice::make_kafka_writable(*options, {}, ec, why);
  if (!out && why->empty()) *why = ec.message();
  return out.release();
}
