// The `modbus` source: polls PLCs, meters and drives over Modbus TCP (several unit ids behind
// one gateway) or RTU (a serial line), function codes 1-4, in poll groups with intervals of
// their own. One event per group per poll (or, reporting by exception, per poll that changed
// something), through the durable queue like every source. docs/modbus.md.
#pragma once

#include "seedance/plugin_registry.h"

namespace seedance::sources {

SourceFactory ModbusSourceFactory();

}  // namespace seedance::sources
