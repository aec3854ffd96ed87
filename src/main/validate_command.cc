#include <iostream>

#include "core/pipeline.h"
#include "main/commands.h"
#include "main/load_config.h"
#include "plugins/builtin_plugins.h"

namespace seedance::cli {

int Validate(const RunOptions& options) {
  PluginRegistry registry;
  RegisterBuiltinPlugins(registry);
  auto config = LoadForRun(options, registry);
  if (!config) {
    std::cerr << config.error().message() << "\n";
    return kExitConfig;
  }
  // Build every component (scripts compile, URLs parse) without starting anything.
  observe::MetricsRegistry metrics;
  auto pipeline = Pipeline::Create(*config, registry, metrics, {.validate_only = true});
  if (!pipeline) {
    std::cerr << pipeline.error().message() << "\n";
    return kExitConfig;
  }
  std::cout << options.config_path << ": ok (" << config->sources.size() << " source(s), "
            << config->processors.size() << " processor(s), " << config->sinks.size()
            << " sink(s))\n";
  return kExitOk;
}

}  // namespace seedance::cli
