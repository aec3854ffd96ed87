// The `lua` processor: runs each event through a Lua function, process(event).
//
// process returns the event (possibly changed), nil (drop) or a list of events. A script
// error, a field of the wrong type or a limit reached (instructions, time, memory, events per
// call: lua_limits.h) sends the event to the `error` output and the pipeline goes on; a state
// that stays full after the memory limit is replaced by a fresh one. With `script:`, the file
// is watched and each new version loaded on a thread of its own (lua_reloader.h): it takes
// over between two events (none lost or seen twice); a version that fails to load is logged
// and the running one stays.
#pragma once

#include "seedance/plugin_registry.h"

namespace seedance::processors {

ProcessorFactory LuaProcessorFactory();

}  // namespace seedance::processors
