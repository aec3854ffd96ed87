// A source that clients push to over HTTP (the http and otlp sources): the answer (200) comes
// only once every event of the request is safe in the durable queue (the MQTT source's
// ack-after-append promise); 503 with Retry-After under backpressure. What the bodies hold
// and how the answers look is the protocol's (push_protocol.h). docs/http-source.md.
#pragma once

#include <memory>

#include "seedance/plugin_context.h"
#include "seedance/result.h"
#include "seedance/source.h"
#include "sources/http/http_source_options.h"
#include "sources/http/push_protocol.h"

namespace seedance::sources {

// Loads the TLS files here, so `validate` reports a bad one.
Result<std::unique_ptr<Source>> MakePushSource(HttpSourceOptions options,
                                               std::unique_ptr<PushProtocol> protocol,
                                               const PluginContext& ctx);

}  // namespace seedance::sources
