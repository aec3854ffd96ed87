#include "main/load_config.h"

namespace seedance::cli {

Result<config::PipelineConfig> LoadForRun(const RunOptions& options,
                                          const PluginRegistry& registry) {
  SEEDANCE_ASSIGN_OR_RETURN(config::PipelineConfig config,
                            config::LoadConfigFile(options.config_path, registry));
  if (!options.filter_path.empty()) {
    SEEDANCE_RETURN_IF_ERROR(config::AddFilterScript(&config, options.filter_path, registry));
  }
  return config;
}

}  // namespace seedance::cli
