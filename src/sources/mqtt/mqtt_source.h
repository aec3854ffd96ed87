// The `mqtt` source: subscribes to topic filters on a broker and emits one event per message.
//
// QoS 1/2 messages are acknowledged to the broker only when the pipeline says the event is
// safe (see Pipeline); under backpressure the source stops reading from the broker.
#pragma once

#include "seedance/plugin_registry.h"

namespace seedance::sources {

SourceFactory MqttSourceFactory();

}  // namespace seedance::sources
