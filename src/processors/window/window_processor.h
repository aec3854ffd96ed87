// The `window` processor: keyed tumbling or sliding event-time windows with count, sum, min,
// max, avg and quantiles (DDSketch, 1% relative error). Fires when the watermark from an
// earlier `watermark` processor passes a window's end; late events within the allowed
// lateness update and re-emit it; events for closed windows go to `stale`. Each emission is
// one JSON event: key, window start/end, the aggregates, count and `update` (0 first).
// Window state is checkpointed; size, slide, aggregates and lateness can change on SIGHUP.
#pragma once

#include "seedance/plugin_registry.h"

namespace seedance::processors {

ProcessorFactory WindowProcessorFactory();

}  // namespace seedance::processors
