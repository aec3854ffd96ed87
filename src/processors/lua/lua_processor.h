// The `lua` processor: runs each event through a Lua function, process(event).
//
// process returns the event (possibly changed), nil (drop) or a list of events. A script
// error or a blown instruction budget sends the event to the `error` output and the
// pipeline goes on. With `script:`, the file is watched: a new version takes over between
// two events (none lost or seen twice) within `reload_check`; a version that fails to load
// is logged and the running one stays.
#pragma once

#include "seedance/plugin_registry.h"

namespace seedance::processors {

ProcessorFactory LuaProcessorFactory();

}  // namespace seedance::processors
