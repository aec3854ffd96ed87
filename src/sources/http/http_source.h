// The `http` source: devices and programs POST JSON (one object, an array, or NDJSON) to
// `listen`; the answer (200) comes only once every event of the request is safe in the
// durable queue (the MQTT source's ack-after-append promise). docs/http-source.md.
#pragma once

#include "seedance/plugin_registry.h"

namespace seedance::sources {

SourceFactory HttpSourceFactory();

}  // namespace seedance::sources
