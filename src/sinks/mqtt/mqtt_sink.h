// The `mqtt` sink: publishes each event as one MQTT message (3.1.1 or 5, QoS 0/1/2, TLS) on
// a topic built from the event (TopicTemplate), sharing the connection code and keys with the
// MQTT source (mqtt/connection_params.h).
//
// An attempt publishes its batch's events and is delivered once every message is complete
// (QoS 0: written; QoS 1: PUBACK; QoS 2: PUBCOMP). A message the broker refuses (MQTT 5 reason
// code ≥ 0x80, e.g. 0x87 not authorized) and an event whose topic cannot be filled go to
// `rejected` with the reason; a broker's "quota exceeded" (0x97) retries the batch. Not
// connected: the attempt is retried by the runner (backoff). Messages in flight when the
// connection drops are sent again after the reconnect (OutboundSession); the runner's timeout
// bounds the wait.
#pragma once

#include "seedance/plugin_registry.h"

namespace seedance::sinks {

SinkFactory MqttSinkFactory();

}  // namespace seedance::sinks
