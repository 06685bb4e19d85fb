// The Kafka part of sluice-log, a module (sluice-log-kafka.so) that
// sluice-log loads with dlopen() only for a kafka:// DEST: a run that writes
// a file or sends to syslog does not load librdkafka and the TLS, SASL and
// compression libraries it brings (several MB of address space, and their
// start-up cost).
#pragma once

#include <string>
#include <string_view>
#include <system_error>

#include "sluice/kafka/kafka_sink.h"
#include "sluice/stream/writable.h"

// The module's one entry point, unmangled so that dlsym() finds it: a new
// Kafka writable (make_kafka_writable()) owned by the caller, or null with
// librdkafka's reason in `why`.
extern "C" sluice::writable* sluice_log_make_kafka(const sluice::kafka_options* options, std::string* why);
using sluice_log_make_kafka_fn = decltype(&sluice_log_make_kafka);

// The second entry point, for sluice-logd's relay (logd/kafka_hop.h): one
// message with a key to a writable the first one made with
// kafka_options::framed (kafka_writable::produce(), which lives in
// libsluice-kafka as the module does). Returns write()'s result.
extern "C" bool sluice_log_kafka_produce(sluice::writable* out, std::string_view key, std::string_view value,
                                         sluice::write_cb* cb);
using sluice_log_kafka_produce_fn = decltype(&sluice_log_kafka_produce);
// Whether a callback's error is a refusal (is_kafka_refusal()).
extern "C" bool sluice_log_kafka_refused(const std::error_code* ec);
using sluice_log_kafka_refused_fn = decltype(&sluice_log_kafka_refused);
