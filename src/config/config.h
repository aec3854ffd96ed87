// The pipeline configuration: YAML file → checked, typed PipelineConfig.
//
// Every error names file:line:column, the key path (e.g. sources[0].uri) and what was
// expected; unknown keys get a "did you mean" hint. All errors of a file are reported at once.
#pragma once

#include <chrono>
#include <string>
#include <vector>

#include "config/env_expand.h"
#include "governor/limits_settings.h"
#include "observe/metrics_settings.h"
#include "observe/tracing_settings.h"
#include "seedance/event.h"
#include "seedance/param_spec.h"
#include "seedance/plugin_registry.h"
#include "seedance/result.h"
#include "storage/queue_settings.h"
#include "util/log_settings.h"

namespace seedance::config {

struct ComponentConfig {
  PluginKind kind = PluginKind::kSource;
  std::string type;
  std::string name;            // unique per kind; defaults to the type (then type_2, ...)
  std::vector<Output> inputs;  // sinks only: which outputs they consume; default {kMain}
  // Sinks only: named outputs (declared by a processor's `outputs:`) they consume too.
  std::vector<std::string> named_inputs;
  // Sinks only: MQTT-style topic filters (+, #) an event's topic must match; empty: any.
  std::vector<std::string> topics;
  Params params;
  std::string location;  // "file:line:column" of the component's section
};

struct PipelineConfig {
  std::string file;
  std::vector<ComponentConfig> sources;
  std::vector<ComponentConfig> processors;
  std::vector<ComponentConfig> sinks;
  size_t queue_capacity = 10000;  // events between stages
  std::chrono::nanoseconds shutdown_timeout = std::chrono::seconds(5);
  // The runtime sections, each declared next to its owner.
  storage::QueueSettings queue;
  governor::LimitsSettings limits;
  observe::MetricsSettings metrics;
  observe::TracingSettings tracing;
  util::LogSettings log;
};

// Loads and checks `path`. kInvalidArgument (all problems, one per line) or kNotFound.
Result<PipelineConfig> LoadConfigFile(const std::string& path, const PluginRegistry& registry,
                                      const EnvLookup& env = ProcessEnv());
// Same, from text; `file` is used in messages.
Result<PipelineConfig> LoadConfigText(const std::string& text, const std::string& file,
                                      const PluginRegistry& registry,
                                      const EnvLookup& env = ProcessEnv());

// Puts a `lua` processor named "filter" running `script_path` in front of the configured
// processors (the --filter option). kInvalidArgument when no lua plugin is registered.
Status AddFilterScript(PipelineConfig* config, const std::string& script_path,
                       const PluginRegistry& registry);

}  // namespace seedance::config
