// tools/logd/kafka_hop.h's key rule for a relay's Kafka next hop: the
// syslog HOSTNAME (RFC 5424 or RFC 3164), else the sender's address
// without its port.
#include "logd/kafka_hop.h"

#include <doctest/doctest.h>

using sluice_tools::kafka_key;

TEST_CASE("an RFC 5424 message is keyed by its HOSTNAME") {
  CHECK(kafka_key("<14>1 2026-12-06T02:00:00.000000Z web1 app 42 - - hello", "10.0.0.9:5000") == "web1");
  CHECK(kafka_key("<165>1 - host.example.com - - - -", "10.0.0.9:5000") == "host.example.com");
}

TEST_CASE("an RFC 3164 message is keyed by the field after its timestamp") {
  CHECK(kafka_key("<13>Dec  6 02:00:00 db2 cron[12]: job", "10.0.0.9:5000") == "db2");
  CHECK(kafka_key("<13>Dec 16 02:00:00 db2 x", "10.0.0.9:5000") == "db2");
}

TEST_CASE("a message without a HOSTNAME is keyed by the sender's address, without its port") {
  CHECK(kafka_key("<14>1 2026-12-06T02:00:00Z - app - - - nil host", "10.0.0.9:5000") == "10.0.0.9");
  CHECK(kafka_key("no header at all", "10.0.0.9:5000") == "10.0.0.9");
  CHECK(kafka_key("<14>1 truncated", "::1:5000") == "::1");
  CHECK(kafka_key("<999999>1 a b c", "10.0.0.9:5000") == "10.0.0.9");
  CHECK(kafka_key("", "unix:/run/log.sock") == "unix:/run/log.sock");
}
