#include "config/config.h"

#include <gtest/gtest.h>

#include "plugins/builtin_plugins.h"

namespace seedance::config {
namespace {

// A checked value as the config layer stored it (T{} when absent or of another type).
template <typename T>
T Value(const Params& params, const std::string& name) {
  const ParamValue* v = params.Find(name);
  const T* t = v == nullptr ? nullptr : std::get_if<T>(v);
  return t == nullptr ? T{} : *t;
}
bool IsSection(const Params& params, const std::string& name) {
  return Value<std::shared_ptr<const Params>>(params, name) != nullptr;
}

class ConfigTest : public ::testing::Test {
 protected:
  ConfigTest() { RegisterBuiltinPlugins(registry_); }
  Result<PipelineConfig> Load(
      const std::string& text, EnvLookup env = [](const std::string&) { return std::nullopt; }) {
    return LoadConfigText(text, "c.yaml", registry_, env);
  }
  PluginRegistry registry_;
};

constexpr const char* kSeed = R"(sources:
  - type: mqtt
    uri: "tcp://broker.local:1883"
    topic: "sensor/+/temperature"
sinks:
  - type: http
    endpoint: "http://api.example.com/v1/metrics"
    method: POST
)";

TEST_F(ConfigTest, SeedConfigLoadsWithDefaults) {
  auto c = Load(kSeed);
  ASSERT_TRUE(c.has_value()) << c.error().message();
  ASSERT_EQ(c->sources.size(), 1u);
  EXPECT_EQ(c->sources[0].name, "mqtt");
  EXPECT_EQ(Value<int64_t>(c->sources[0].params, "qos"), 1);
  EXPECT_EQ(Value<std::vector<std::string>>(c->sources[0].params, "topic"),
            std::vector<std::string>{"sensor/+/temperature"});
  EXPECT_EQ(Value<std::string>(c->sinks[0].params, "method"), "POST");
  EXPECT_EQ(Value<std::chrono::nanoseconds>(c->sinks[0].params, "timeout"),
            std::chrono::seconds(5));
  EXPECT_EQ(c->sinks[0].inputs, std::vector<Output>{Output::kMain});
  EXPECT_EQ(c->queue_capacity, 10000u);
  EXPECT_TRUE(c->metrics.listen.empty());
}

TEST_F(ConfigTest, ReportsEveryProblemWithLineColumnAndKey) {
  auto c = Load(R"(sources:
  - type: mqtt
    uri: "tcp://h:1883"
    topic: "a"
    qos: 7
sinks:
  - type: http
    endpont: "http://x/"
)");
  ASSERT_FALSE(c.has_value());
  const std::string& m = c.error().message();
  EXPECT_NE(m.find("c.yaml:5:10: sources[0].qos: must be 0, 1 or 2"), std::string::npos) << m;
  EXPECT_NE(m.find("c.yaml:8:5: sinks[0]: unknown key \"endpont\" (did you mean \"endpoint\"?)"),
            std::string::npos)
      << m;
  EXPECT_NE(m.find("c.yaml:7:5: sinks[0]: missing required key \"endpoint\""), std::string::npos)
      << m;
}

TEST_F(ConfigTest, ExpandsEnvironmentReferences) {
  auto env = [](const std::string& n) -> std::optional<std::string> {
    if (n == "HOST") return "127.0.0.1";
    return std::nullopt;
  };
  auto c = Load(R"(sources:
  - type: mqtt
    uri: "tcp://${HOST}:${PORT:-1884}"
    topic: a
sinks:
  - type: stdout
)",
                env);
  ASSERT_TRUE(c.has_value()) << c.error().message();
  EXPECT_EQ(Value<std::string>(c->sources[0].params, "uri"), "tcp://127.0.0.1:1884");
}

TEST_F(ConfigTest, NamesDefaultToTypeAndMustBeUnique) {
  auto c = Load(R"(sources:
  - {type: generate}
  - {type: generate}
sinks:
  - {type: stdout, name: out}
  - {type: file, name: out, path: /tmp/x}
)");
  ASSERT_FALSE(c.has_value());
  EXPECT_NE(c.error().message().find("duplicate sink name \"out\""), std::string::npos);
  auto ok =
      Load("sources:\n  - {type: generate}\n  - {type: generate}\nsinks:\n  - {type: stdout}\n");
  ASSERT_TRUE(ok.has_value());
  EXPECT_EQ(ok->sources[1].name, "generate_2");
}

TEST_F(ConfigTest, SinkInputsSelectSideOutputs) {
  auto c = Load(
      "sources:\n  - {type: generate}\nsinks:\n  - {type: stdout, inputs: [error, rejected]}\n");
  ASSERT_TRUE(c.has_value());
  EXPECT_EQ(c->sinks[0].inputs, (std::vector<Output>{Output::kError, Output::kRejected}));
  auto bad = Load("sources:\n  - {type: generate}\nsinks:\n  - {type: stdout, inputs: [errors]}\n");
  ASSERT_FALSE(bad.has_value());
  EXPECT_NE(bad.error().message().find("\"errors\" is not an output"), std::string::npos);
}

TEST_F(ConfigTest, SinkTopicsAreCheckedTopicFilters) {
  auto c = Load(
      "sources:\n  - {type: generate}\nsinks:\n  - {type: stdout, topics: [\"a/+/t\", \"b/#\"]}\n");
  ASSERT_TRUE(c.has_value());
  EXPECT_EQ(c->sinks[0].topics, (std::vector<std::string>{"a/+/t", "b/#"}));
  EXPECT_TRUE(Load("sources:\n  - {type: generate}\nsinks:\n  - {type: stdout}\n")
                  ->sinks[0]
                  .topics.empty());
  for (const char* bad : {"[\"a/#/b\"]", "[\"a+/b\"]", "[\"$share/g/a\"]", "[]"}) {
    auto r =
        Load(std::string("sources:\n  - {type: generate}\nsinks:\n  - {type: stdout, topics: ") +
             bad + "}\n");
    ASSERT_FALSE(r.has_value()) << bad;
    EXPECT_NE(r.error().message().find("sinks[0].topics"), std::string::npos)
        << r.error().message();
  }
}

TEST_F(ConfigTest, SinksTakeNamedOutputsOnlyWhenAProcessorDeclaresThem) {
  const std::string processors =
      "sources:\n  - {type: generate}\nprocessors:\n  - type: lua\n    outputs: [alerts]\n"
      "    code: 'function process(e) return e end'\nsinks:\n";
  auto c = Load(processors + "  - {type: stdout, inputs: [alerts, error]}\n");
  ASSERT_TRUE(c.has_value()) << c.error().message();
  EXPECT_EQ(c->sinks[0].named_inputs, std::vector<std::string>{"alerts"});
  EXPECT_EQ(c->sinks[0].inputs, std::vector<Output>{Output::kError});
  auto bad = Load(processors + "  - {type: stdout, inputs: [alert]}\n");
  ASSERT_FALSE(bad.has_value());
  EXPECT_NE(bad.error().message().find(":8:28: sinks[0].inputs: \"alert\" is not an output"),
            std::string::npos)
      << bad.error().message();
  EXPECT_NE(bad.error().message().find("declared: alerts"), std::string::npos);
}

TEST_F(ConfigTest, FilterOptionAddsALuaProcessorInFront) {
  auto c = Load(kSeed);
  ASSERT_TRUE(c.has_value());
  ASSERT_TRUE(AddFilterScript(&*c, "/some/filter.lua", registry_).ok());
  ASSERT_EQ(c->processors.size(), 1u);
  EXPECT_EQ(c->processors[0].name, "filter");
  EXPECT_EQ(Value<std::string>(c->processors[0].params, "script"), "/some/filter.lua");
  EXPECT_EQ(Value<int64_t>(c->processors[0].params, "instruction_limit"), 10000000);
}

TEST_F(ConfigTest, InvalidYamlNamesThePosition) {
  auto c = Load("sources: [\n");
  ASSERT_FALSE(c.has_value());
  EXPECT_EQ(c.error().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(c.error().message().rfind("c.yaml:", 0), 0u);
  EXPECT_NE(c.error().message().find("invalid YAML"), std::string::npos);
}

TEST(EnvExpandTest, HandlesDefaultsEscapesAndErrors) {
  auto env = [](const std::string& n) -> std::optional<std::string> {
    if (n == "A") return "x";
    if (n == "EMPTY") return "";
    return std::nullopt;
  };
  EXPECT_EQ(*ExpandEnv("${A}/${B:-d}/$$/${EMPTY:-e}/$x", env), "x/d/$/e/$x");
  EXPECT_FALSE(ExpandEnv("${B}", env).has_value());
  EXPECT_FALSE(ExpandEnv("${A", env).has_value());
}

}  // namespace
}  // namespace seedance::config

namespace seedance::config {
namespace {

TEST_F(ConfigTest, KeepAliveOutsideSixteenBitsOfSecondsIsRefusedWithItsLine) {
  for (const char* value : {"65536s", "0.4s", "70000s", "9223372037s"}) {
    std::string text = kSeed;
    text.insert(text.find("    topic:"), std::string("    keep_alive: ") + value + "\n");
    auto c = Load(text);
    ASSERT_FALSE(c.has_value()) << value;
    EXPECT_NE(c.error().message().find("c.yaml:4"), std::string::npos) << c.error().message();
    EXPECT_NE(c.error().message().find("keep_alive"), std::string::npos) << c.error().message();
  }
  std::string ok = kSeed;
  ok.insert(ok.find("    topic:"), "    keep_alive: 65535s\n");
  EXPECT_TRUE(Load(ok).has_value());
}

TEST_F(ConfigTest, ASinkTimeoutUnderAMillisecondIsRefusedWithItsLine) {
  for (const char* value : {"0s", "0ms", "500us"}) {
    std::string text = kSeed;
    text += std::string("    timeout: ") + value + "\n";
    auto c = Load(text);
    ASSERT_FALSE(c.has_value()) << value;
    EXPECT_NE(c.error().message().find("c.yaml:9"), std::string::npos) << c.error().message();
    EXPECT_NE(c.error().message().find("must be at least 1ms"), std::string::npos)
        << c.error().message();
  }
  std::string ok = kSeed;
  ok += "    timeout: 1ms\n";
  EXPECT_TRUE(Load(ok).has_value());
}

TEST_F(ConfigTest, ASectionMayAlsoBeGivenAsAPlainValue) {
  auto fixed = Load(
      "sources:\n  - {type: generate}\nsinks:\n  - {type: http, endpoint: 'http://h/', "
      "concurrency: 8}\n");
  ASSERT_TRUE(fixed.has_value()) << fixed.error().message();
  EXPECT_FALSE(IsSection(fixed->sinks[0].params, "concurrency"));
  EXPECT_EQ(Value<int64_t>(fixed->sinks[0].params, "concurrency"), 8);
  auto adaptive = Load(
      "sources:\n  - {type: generate}\nsinks:\n  - type: http\n    endpoint: 'http://h/'\n"
      "    concurrency: {adaptive: true, target_p99: 20ms}\n");
  ASSERT_TRUE(adaptive.has_value()) << adaptive.error().message();
  ASSERT_TRUE(IsSection(adaptive->sinks[0].params, "concurrency"));
  const Params& c = *Value<std::shared_ptr<const Params>>(adaptive->sinks[0].params, "concurrency");
  EXPECT_EQ(Value<std::chrono::nanoseconds>(c, "target_p99"), std::chrono::milliseconds(20));
  EXPECT_EQ(Value<int64_t>(c, "max"), 64);
  auto zero = Load(
      "sources:\n  - {type: generate}\nsinks:\n  - {type: http, endpoint: 'http://h/', "
      "concurrency: 0}\n");
  ASSERT_FALSE(zero.has_value());
  EXPECT_NE(zero.error().message().find("sinks[0].concurrency: must be at least 1"),
            std::string::npos)
      << zero.error().message();
}

TEST_F(ConfigTest, TracingIsOffByDefaultAndCheckedWithItsLine) {
  auto off = Load(kSeed);
  ASSERT_TRUE(off.has_value()) << off.error().message();
  EXPECT_FALSE(off->tracing.on());
  EXPECT_EQ(off->tracing.sample_ratio, 0);
  auto on = Load(std::string(kSeed) + R"(tracing:
  url: "http://127.0.0.1:4318/v1/traces"
  sample_ratio: 0.25
  interval: 200ms
)");
  ASSERT_TRUE(on.has_value()) << on.error().message();
  EXPECT_TRUE(on->tracing.on());
  EXPECT_EQ(on->tracing.sample_ratio, 0.25);
  EXPECT_EQ(on->tracing.interval, std::chrono::milliseconds(200));
  EXPECT_EQ(on->tracing.service_name, "seedance");
  auto bad = Load(std::string(kSeed) + R"(tracing:
  url: "gopher://x"
  sample_ratio: 2
)");
  ASSERT_FALSE(bad.has_value());
  const std::string& m = bad.error().message();
  EXPECT_NE(m.find("c.yaml:10:8: tracing.url"), std::string::npos) << m;
  EXPECT_NE(m.find("c.yaml:11:17: tracing.sample_ratio: expected a share from 0 to 1, got 2"),
            std::string::npos)
      << m;
}

}  // namespace
}  // namespace seedance::config
