// The `stdout` sink: writes each event as one line of NDJSON to standard output.
#pragma once

#include "seedance/plugin_registry.h"

namespace seedance::sinks {

SinkFactory StdoutSinkFactory();

}  // namespace seedance::sinks
