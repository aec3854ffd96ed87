// The `kafka` sink: events produced to Kafka (or Redpanda) with librdkafka's idempotent
// producer (`enable.idempotence`, `acks=all`); a batch is delivered when every message has a
// successful delivery report. Topic and key are templates over the event (the MQTT sink's
// placeholders), event headers become record headers, and librdkafka properties pass through
// (TLS, SASL). librdkafka is loaded at start (sinks/kafka/kafka_library.h).
#pragma once

#include "seedance/plugin_registry.h"

namespace seedance::sinks {

SinkFactory KafkaSinkFactory();

// Empty when `topic` is a valid Kafka topic name (1-249 of [a-zA-Z0-9._-], not "." or "..");
// else what is wrong with it.
std::string CheckKafkaTopic(std::string_view topic);

}  // namespace seedance::sinks
