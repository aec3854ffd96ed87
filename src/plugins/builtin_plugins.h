// The one explicit list of compiled-in plugins.
#pragma once

#include "seedance/plugin_registry.h"

namespace seedance {

void RegisterBuiltinPlugins(PluginRegistry& registry);

}  // namespace seedance
