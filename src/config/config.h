// The pipeline configuration: YAML file → checked, typed PipelineConfig.
//
// Every error names file:line:column, the key path (e.g. sources[0].uri) and what was
// expected; unknown keys get a "did you mean" hint. All errors of a file are reported at once.
#pragma once

#include <chrono>
#include <string>
#include <vector>

#include "config/env_expand.h"
#include "seedance/event.h"
#include "seedance/param_spec.h"
#include "seedance/plugin_registry.h"
#include "seedance/result.h"
#include "seedance/trim.h"

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

// The queue between processors and sinks (the `queue:` section).
struct QueueSettings {
  bool durable = true;  // buffer: disk (default) or memory
  std::string data_dir = "seedance-data";
  uint64_t segment_bytes = 64ull << 20;
  uint64_t max_disk = 1ull << 30;
  bool drop_oldest = false;  // when_full: block (default) or drop_oldest
  enum class Fsync { kAlways, kInterval, kNever } fsync = Fsync::kInterval;
  std::chrono::nanoseconds fsync_interval = std::chrono::milliseconds(100);
};

// The resource governor's memory budget (the `limits:` section). memory == 0: no budget.
// The triggers are the trimming policy's (one definition, in the trim library's public API);
// the fragmentation trigger does not apply here: batches are not placed in an arena.
struct LimitsSettings {
  uint64_t memory = 0;
  std::chrono::nanoseconds step = std::chrono::milliseconds(100);
  trim::PolicyOptions policy = {.min_victim_bytes = 0};
};

struct PipelineConfig {
  std::string file;
  std::vector<ComponentConfig> sources;
  std::vector<ComponentConfig> processors;
  std::vector<ComponentConfig> sinks;
  size_t queue_capacity = 10000;  // events between stages
  std::chrono::nanoseconds shutdown_timeout = std::chrono::seconds(5);
  QueueSettings queue;
  LimitsSettings limits;
  std::string metrics_listen;  // "" = off
  std::string log_level = "info";
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
