// Helpers for unit tests of plugins: schema-checked Params from a YAML snippet, a plugin
// context with a real metrics registry, and a ProcessorOutput that records what it gets.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "config/config.h"
#include "observe/component_stats.h"
#include "observe/metrics.h"
#include "plugins/builtin_plugins.h"
#include "seedance/plugin_context.h"
#include "seedance/processor.h"
#include "util/event_loop.h"

namespace seedance::testing {

// Checks `yaml` (the keys of one processor section, without "type") against the schema of
// processor `type`, with defaults applied. Fails the test on errors.
Params ProcessorParams(const std::string& type, const std::string& yaml);

// The same for the keys of one sink section (delivery settings included).
Params SinkParams(const std::string& type, const std::string& yaml);

struct Harness {
  Harness();
  PluginContext Context(const std::string& name);
  PluginRegistry registry;
  observe::MetricsRegistry metrics;
  std::vector<std::unique_ptr<ComponentStats>> stats;
};

struct Side {
  Output output;
  Event event;
  std::string reason;
};

class RecordingOutput : public ProcessorOutput {
 public:
  void Emit(Event&& e) override { main.push_back(std::move(e)); }
  void EmitSide(Output o, Event&& e, std::string_view reason) override {
    side.push_back(Side{o, std::move(e), std::string(reason)});
  }
  void EmitWatermark(std::string_view scope, int64_t watermark_ns) override {
    watermarks.emplace_back(std::string(scope), watermark_ns);
  }
  std::vector<Event> main;
  std::vector<Side> side;
  std::vector<std::pair<std::string, int64_t>> watermarks;
};

Event JsonEvent(const std::string& payload, const std::string& topic = "sensor/1/temperature");

}  // namespace seedance::testing
