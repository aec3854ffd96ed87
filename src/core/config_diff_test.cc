// ConfigDiff: which reload a changed file needs.
#include "core/config_diff.h"

#include <gtest/gtest.h>

#include "plugins/builtin_plugins.h"

namespace seedance {
namespace {

constexpr const char* kBase = R"(sources:
  - {type: generate, rate: 10}
processors:
  - {name: w, type: window, size: 10s}
sinks:
  - {name: out, type: file, path: /tmp/out}
queue:
  data_dir: /tmp/seedance-diff-test
metrics:
  listen: "127.0.0.1:9464"
)";

config::PipelineConfig LoadPipeline(const std::string& text) {
  PluginRegistry registry;
  RegisterBuiltinPlugins(registry);
  auto c = config::LoadConfigText(text, "test.yaml", registry);
  EXPECT_TRUE(c.has_value()) << (c ? "" : c.error().message());
  return c ? *c : config::PipelineConfig{};
}

std::string With(std::string from, const std::string& what) {
  const size_t at = std::string(kBase).find(from);
  std::string text = kBase;
  text.replace(at, from.size(), what);
  return text;
}

TEST(ConfigDiffTest, TheSameFileChangesNothing) {
  const ConfigDiff d = DiffConfigs(LoadPipeline(kBase), LoadPipeline(kBase));
  EXPECT_TRUE(d.empty());
  EXPECT_FALSE(d.rebuild);
}

TEST(ConfigDiffTest, ProcessorParametersAreTakenInPlace) {
  const ConfigDiff d =
      DiffConfigs(LoadPipeline(kBase), LoadPipeline(With("size: 10s", "size: 20s")));
  EXPECT_TRUE(d.processor_params);
  EXPECT_FALSE(d.rebuild);
  EXPECT_EQ(d.changes, std::vector<std::string>{"processor \"w\" parameters"});
}

TEST(ConfigDiffTest, ASinkChangedAddedOrRemovedIsNamedAndRebuiltAlone) {
  const std::string changed = With("path: /tmp/out}", "path: /tmp/other}");
  ConfigDiff d = DiffConfigs(LoadPipeline(kBase), LoadPipeline(changed));
  EXPECT_TRUE(d.rebuild);
  EXPECT_FALSE(d.whole);
  EXPECT_EQ(d.changes, std::vector<std::string>{"sink \"out\" changed"});
  EXPECT_EQ(d.sinks.changed, std::vector<std::string>{"out"});
  EXPECT_TRUE(d.sinks.added.empty() && d.sinks.removed.empty() && !d.sources.any());

  const std::string added =
      With("  - {name: out, type: file, path: /tmp/out}",
           "  - {name: out, type: file, path: /tmp/out}\n  - {name: two, type: stdout}");
  d = DiffConfigs(LoadPipeline(kBase), LoadPipeline(added));
  EXPECT_TRUE(d.rebuild);
  EXPECT_FALSE(d.whole);
  EXPECT_EQ(d.sinks.added, std::vector<std::string>{"two"});
  d = DiffConfigs(LoadPipeline(added), LoadPipeline(kBase));
  EXPECT_EQ(d.sinks.removed, std::vector<std::string>{"two"});
  EXPECT_EQ(d.changes, std::vector<std::string>{"sink \"two\" removed"});
  EXPECT_FALSE(d.whole);
}

TEST(ConfigDiffTest, ASourceIsRebuiltAloneAQueueLimitRebuildsEverything) {
  ConfigDiff d = DiffConfigs(LoadPipeline(kBase), LoadPipeline(With("rate: 10", "rate: 20")));
  EXPECT_TRUE(d.rebuild);
  EXPECT_FALSE(d.whole);
  EXPECT_EQ(d.changes, std::vector<std::string>{"source \"generate\" changed"});
  EXPECT_EQ(d.sources.changed, std::vector<std::string>{"generate"});
  d = DiffConfigs(LoadPipeline(kBase),
                  LoadPipeline(With("data_dir: /tmp/seedance-diff-test",
                                    "data_dir: /tmp/seedance-diff-test\n  max_disk: 10MiB")));
  EXPECT_TRUE(d.rebuild);
  EXPECT_TRUE(d.whole);
  EXPECT_EQ(d.changes, std::vector<std::string>{"queue"});
}

TEST(ConfigDiffTest, TracingRebuildsThePipelineWithItsTracer) {
  const std::string on = std::string(kBase) + "tracing:\n  url: http://127.0.0.1:4318/v1/traces\n";
  ConfigDiff d = DiffConfigs(LoadPipeline(kBase), LoadPipeline(on));
  EXPECT_TRUE(d.rebuild);
  EXPECT_TRUE(d.whole);
  EXPECT_EQ(d.changes, std::vector<std::string>{"tracing"});
  d = DiffConfigs(LoadPipeline(on), LoadPipeline(on + "  sample_ratio: 0.5\n"));
  EXPECT_TRUE(d.whole);
  EXPECT_TRUE(DiffConfigs(LoadPipeline(on), LoadPipeline(on)).empty());
}

TEST(ConfigDiffTest, ReorderedSinksOrMemoryBuffersRebuildEverything) {
  const std::string two =
      With("  - {name: out, type: file, path: /tmp/out}",
           "  - {name: out, type: file, path: /tmp/out}\n  - {name: two, type: stdout}");
  const std::string swapped =
      With("  - {name: out, type: file, path: /tmp/out}",
           "  - {name: two, type: stdout}\n  - {name: out, type: file, path: /tmp/out}");
  ConfigDiff d = DiffConfigs(LoadPipeline(two), LoadPipeline(swapped));
  EXPECT_TRUE(d.whole);
  EXPECT_EQ(d.changes, std::vector<std::string>{"sinks reordered"});

  const std::string memory = With("data_dir: /tmp/seedance-diff-test",
                                  "data_dir: /tmp/seedance-diff-test\n  buffer: memory");
  std::string memory_changed = memory;
  memory_changed.replace(memory_changed.find("path: /tmp/out}"), 15, "path: /tmp/other}");
  d = DiffConfigs(LoadPipeline(memory), LoadPipeline(memory_changed));
  EXPECT_TRUE(d.whole);
  std::string memory_source = memory;
  memory_source.replace(memory_source.find("rate: 10"), 8, "rate: 20");
  d = DiffConfigs(LoadPipeline(memory), LoadPipeline(memory_source));
  EXPECT_TRUE(d.rebuild);
  EXPECT_FALSE(d.whole);
}

TEST(ConfigDiffTest, TheListenerAndTheLogLevelChangeWithoutARebuild) {
  ConfigDiff d =
      DiffConfigs(LoadPipeline(kBase), LoadPipeline(With("127.0.0.1:9464", "127.0.0.1:9465")));
  EXPECT_TRUE(d.listener);
  EXPECT_FALSE(d.rebuild);
  d = DiffConfigs(LoadPipeline(kBase), LoadPipeline(std::string(kBase) + "log:\n  level: debug\n"));
  EXPECT_TRUE(d.log_level);
  EXPECT_FALSE(d.rebuild);
}

TEST(ConfigDiffTest, WhatAReloadCannotChangeIsRefusedWithWhy) {
  ConfigDiff d = DiffConfigs(LoadPipeline(kBase), LoadPipeline(With("name: w,", "name: v,")));
  EXPECT_NE(d.refused.find("processor list changed"), std::string::npos) << d.refused;
  d = DiffConfigs(LoadPipeline(kBase),
                  LoadPipeline(With("/tmp/seedance-diff-test", "/tmp/elsewhere")));
  EXPECT_NE(d.refused.find("queue.data_dir"), std::string::npos) << d.refused;
  d = DiffConfigs(LoadPipeline(kBase),
                  LoadPipeline(With("data_dir: /tmp/seedance-diff-test",
                                    "data_dir: /tmp/seedance-diff-test\n  buffer: memory")));
  EXPECT_NE(d.refused.find("queue.buffer"), std::string::npos) << d.refused;
}

}  // namespace
}  // namespace seedance
