// The Kafka part of sluice-log, a module (sluice-log-kafka.so) that
// sluice-log loads with dlopen() only for a kafka:// DEST: a run that writes
// a file or sends to syslog does not load librdkafka and the TLS, SASL and
// compression libraries it brings (several MB of address space, and their
// start-up cost).
#pragma once

#include <string>

#include "sluice/kafka/kafka_sink.h"
#include "sluice/stream/writable.h"

// The module's one entry point, unmangled so that dlsym() finds it: a new
// Kafka writable (make_kafka_writable()) owned by the caller, or null with
// librdkafka's reason in `why`.
extern "C" sluice::writable* sluice_log_make_kafka(const sluice::kafka_options* options, std::string* why);
using sluice_log_make_kafka_fn = decltype(&sluice_log_make_kafka);
