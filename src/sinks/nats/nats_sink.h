// The `nats` sink: events published to NATS JetStream, each batch delivered when every message
// has its PubAck from the stream (asynchronous publishes, at most `max_pending` awaiting an
// acknowledgement). Subjects are templates over the event (the MQTT sink's placeholders);
// each message carries a `Nats-Msg-Id` made of the event's source, ingest time and id, which
// survive a restart in the durable queue, so a batch sent again after a crash or a lost
// acknowledgement is dropped by the stream's duplicate window. The client is Debian's
// libnats, loaded at start (sinks/nats/nats_library.h).
#pragma once

#include "seedance/plugin_registry.h"

namespace seedance::sinks {

SinkFactory NatsSinkFactory();

}  // namespace seedance::sinks
