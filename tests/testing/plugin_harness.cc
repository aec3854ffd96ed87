#include "testing/plugin_harness.h"

#include <gtest/gtest.h>

namespace seedance::testing {

namespace {

// Checks `section` (the keys of one component, without "type") of kind `kind` against the
// schema within a minimal config; returns its checked parameters.
Params CheckedParams(const std::string& kind, const std::string& type, const std::string& section) {
  PluginRegistry registry;
  RegisterBuiltinPlugins(registry);
  std::string indented;
  size_t start = 0;
  while (start < section.size()) {
    size_t end = section.find('\n', start);
    if (end == std::string::npos) end = section.size();
    indented += "    " + section.substr(start, end - start) + "\n";
    start = end + 1;
  }
  const std::string component = "  - type: " + type + "\n" + indented;
  std::string text = "sources:\n  - type: generate\n";
  text += kind == "processor" ? "processors:\n" + component + "sinks:\n  - type: stdout\n"
                              : "sinks:\n" + component;
  auto config = config::LoadConfigText(text, "test.yaml", registry);
  EXPECT_TRUE(config.has_value()) << (config ? "" : config.error().message());
  if (!config) return Params();
  return kind == "processor" ? config->processors.at(0).params : config->sinks.at(0).params;
}

}  // namespace

Params ProcessorParams(const std::string& type, const std::string& yaml) {
  return CheckedParams("processor", type, yaml);
}

Params SinkParams(const std::string& type, const std::string& yaml) {
  return CheckedParams("sink", type, yaml);
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
