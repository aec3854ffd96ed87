// Loading the config for `run` and `validate`: the file, then --filter in front.
#pragma once

#include "config/config.h"
#include "main/commands.h"
#include "seedance/plugin_registry.h"

namespace seedance::cli {

Result<config::PipelineConfig> LoadForRun(const RunOptions& options,
                                          const PluginRegistry& registry);

}  // namespace seedance::cli
