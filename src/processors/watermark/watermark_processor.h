// The `watermark` processor: gives each event its event time (from a payload field, or the
// ingest time), tracks watermarks (bounded out-of-orderness, per stream, source or key) and
// sends events older than watermark − allowed_lateness to the `stale` output with the reason
// and their lateness. Watermark advances flow to later processors (windows). State (the
// maximum event time per scope) is checkpointed.
#pragma once

#include "seedance/plugin_registry.h"

namespace seedance::processors {

ProcessorFactory WatermarkProcessorFactory();

}  // namespace seedance::processors
