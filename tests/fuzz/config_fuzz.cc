// Fuzz target for the config loader (config/config.h): any bytes as a config file. The
// operator's file is trusted, but a typo must give an error with a location, never a crash or
// a hang.
#include <cstdlib>
#include <optional>
#include <string>

#include "config/config.h"
#include "fuzz/fuzz_target.h"
#include "plugins/builtin_plugins.h"

SEEDANCE_FUZZ_TARGET(config) {
  static seedance::PluginRegistry* registry = [] {
    auto* r = new seedance::PluginRegistry();
    seedance::RegisterBuiltinPlugins(*r);
    return r;
  }();
  const std::string text(reinterpret_cast<const char*>(data), size);
  seedance::config::EnvLookup env = [](const std::string&) {
    return std::optional<std::string>("x");
  };
  auto config = seedance::config::LoadConfigText(text, "fuzz.yaml", *registry, env);
  if (!config && config.error().message().rfind("fuzz.yaml", 0) != 0) std::abort();
  return 0;
}
