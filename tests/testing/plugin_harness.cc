#include "testing/plugin_harness.h"

#include <gtest/gtest.h>

namespace seedance::testing {

Params ProcessorParams(const std::string& type, const std::string& yaml) {
  PluginRegistry registry;
  RegisterBuiltinPlugins(registry);
  std::string indented;
  size_t start = 0;
  while (start < yaml.size()) {
    size_t end = yaml.find('\n', start);
    if (end == std::string::npos) end = yaml.size();
    indented += "    " + yaml.substr(start, end - start) + "\n";
    start = end + 1;
  }
  std::string text = "sources:\n  - type: generate\nprocessors:\n  - type: " + type + "\n" +
                     indented + "sinks:\n  - type: stdout\n";
  auto config = config::LoadConfigText(text, "test.yaml", registry);
  EXPECT_TRUE(config.has_value()) << (config ? "" : config.error().message());
  if (!config) return Params();
  return config->processors.at(0).params;
}

Params SinkParams(const std::string& type, const std::string& yaml) {
  PluginRegistry registry;
  RegisterBuiltinPlugins(registry);
  std::string indented;
  size_t start = 0;
  while (start < yaml.size()) {
    size_t end = yaml.find('\n', start);
    if (end == std::string::npos) end = yaml.size();
    indented += "    " + yaml.substr(start, end - start) + "\n";
    start = end + 1;
  }
  std::string text = "sources:\n  - type: generate\nsinks:\n  - type: " + type + "\n" + indented;
  auto config = config::LoadConfigText(text, "test.yaml", registry);
  EXPECT_TRUE(config.has_value()) << (config ? "" : config.error().message());
  if (!config) return Params();
  return config->sinks.at(0).params;
}

Harness::Harness() { RegisterBuiltinPlugins(registry); }

PluginContext Harness::Context(const std::string& name) {
  stats.push_back(std::make_unique<ComponentStats>(metrics, "processor", name));
  PluginContext ctx;
  ctx.name = name;
  ctx.metrics = &metrics;
  ctx.stats = stats.back().get();
  return ctx;
}

Event JsonEvent(const std::string& payload, const std::string& topic) {
  Event e;
  e.id = 1;
  e.source = "mqtt";
  e.topic = topic;
  e.payload = payload;
  e.format = PayloadFormat::kJson;
  e.event_time_ns = e.ingest_time_ns = 1'700'000'000'000'000'000;
  return e;
}

}  // namespace seedance::testing
