#include "sluice/kafka/kafka_error.h"

#include <librdkafka/rdkafka.h>

#include <string>

namespace sluice {

namespace {
class kafka_error_category final : public std::error_category {
 public:
  const char* name() const noexcept override { return "rdkafka"; }
  std::string message(int ev) const override {
    const auto err = static_cast<rd_kafka_resp_err_t>(ev);
    return std::string(rd_kafka_err2name(err)) + ": " + rd_kafka_err2str(err);
  }
};
}  // namespace

const std::error_category& kafka_category() noexcept {
  static const kafka_error_category category;
  return category;
}

}  // namespace sluice
