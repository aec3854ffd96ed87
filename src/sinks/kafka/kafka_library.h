// librdkafka (Debian's librdkafka1), loaded when a `kafka` sink is configured rather than
// linked: the binary stays free of it and of the shared libraries it needs (SASL, compression)
// for everyone who does not use Kafka (and SEEDANCE_SINK_KAFKA leaves the sink out). The
// header is the build machine's <librdkafka/rdkafka.h>; the functions are looked up by name.
#pragma once

#include <librdkafka/rdkafka.h>

#include <string>

namespace seedance::sinks {

#define SEEDANCE_KAFKA_FUNCTIONS(X) \
  X(rd_kafka_version_str)           \
  X(rd_kafka_conf_new)              \
  X(rd_kafka_conf_set)              \
  X(rd_kafka_conf_destroy)          \
  X(rd_kafka_conf_set_dr_msg_cb)    \
  X(rd_kafka_conf_set_error_cb)     \
  X(rd_kafka_conf_set_log_cb)       \
  X(rd_kafka_conf_set_opaque)       \
  X(rd_kafka_new)                   \
  X(rd_kafka_destroy)               \
  X(rd_kafka_poll)                  \
  X(rd_kafka_flush)                 \
  X(rd_kafka_purge)                 \
  X(rd_kafka_produceva)             \
  X(rd_kafka_error_code)            \
  X(rd_kafka_error_string)          \
  X(rd_kafka_error_destroy)         \
  X(rd_kafka_err2str)               \
  X(rd_kafka_fatal_error)

struct KafkaLibrary {
#define SEEDANCE_KAFKA_MEMBER(name) decltype(&::name) name = nullptr;
  SEEDANCE_KAFKA_FUNCTIONS(SEEDANCE_KAFKA_MEMBER)
#undef SEEDANCE_KAFKA_MEMBER
};

// The library, loaded on first use and kept; nullptr with `why` (what to install) when it
// cannot be.
const KafkaLibrary* LoadKafkaLibrary(std::string* why);

}  // namespace seedance::sinks
