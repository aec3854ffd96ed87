// The `generate` source: emits a fixed payload at a given rate, for demos and benchmarks.
// "{n}" in the payload is replaced by the event's sequence number.
#pragma once

#include "seedance/plugin_registry.h"

namespace seedance::sources {

SourceFactory GenerateSourceFactory();

}  // namespace seedance::sources
