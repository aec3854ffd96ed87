#include "pipetest/test_spec.h"

#include <gtest/gtest.h>

namespace seedance::pipetest {
namespace {

TEST(TestSpecTest, StepsAndExpectationsAreRead) {
  auto tests = ParseTests(R"(
clock: 2026-02-01T00:00:00Z
tests:
  - name: one
    processors: [a, b]
    input:
      - payload: {n: 1, s: "2", q: '3', f: 1.5, b: true, z: null, list: [x, 2]}
        topic: t/1
        time: 2026-02-01T00:00:05Z
        headers: {h: v}
      - payload: 'not json'
        format: raw
      - advance: 1500ms
      - watermark: 2026-02-01T00:01:00Z
    expect:
      - output: stale
        payload: {n: 1}
        match: subset
        reason: late
        topic: t/1
        where: {n: {">=": 1, exists: true}}
  - name: two
    clock: 2026-03-01T00:00:00Z
    input: [{payload: {}}]
    expect: dropped
)",
                          "t.yaml");
  ASSERT_TRUE(tests) << tests.error().message();
  ASSERT_EQ(tests->size(), 2u);
  const TestCase& one = (*tests)[0];
  EXPECT_EQ(one.location, "t.yaml:4");
  EXPECT_EQ(one.processors, (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(one.clock_ns, 1'769'904'000'000'000'000);
  ASSERT_EQ(one.steps.size(), 4u);
  // Plain scalars are typed, quoted ones stay strings.
  EXPECT_EQ(one.steps[0].payload,
            R"({"n":1,"s":"2","q":"3","f":1.5,"b":true,"z":null,"list":["x",2]})");
  EXPECT_EQ(one.steps[0].topic, "t/1");
  EXPECT_EQ(one.steps[0].time_ns, 1'769'904'005'000'000'000);
  ASSERT_EQ(one.steps[0].headers.size(), 1u);
  EXPECT_EQ(one.steps[1].payload, "not json");
  EXPECT_EQ(one.steps[1].format, PayloadFormat::kRaw);
  EXPECT_EQ(one.steps[2].kind, Step::Kind::kAdvance);
  EXPECT_EQ(one.steps[2].ns, 1'500'000'000);
  EXPECT_EQ(one.steps[3].kind, Step::Kind::kWatermark);
  EXPECT_EQ(one.steps[3].ns, 1'769'904'060'000'000'000);
  ASSERT_EQ(one.expect.size(), 1u);
  const Expected& e = one.expect[0];
  EXPECT_EQ(e.output, "stale");
  EXPECT_TRUE(e.subset);
  EXPECT_EQ(e.payload, R"({"n":1})");
  EXPECT_EQ(e.reason, "late");
  ASSERT_EQ(e.where.size(), 2u);
  EXPECT_EQ(e.where[0].op, ">=");
  EXPECT_EQ(e.where[0].json, "1");
  EXPECT_EQ(e.location, "t.yaml:16");
  const TestCase& two = (*tests)[1];
  EXPECT_EQ(two.clock_ns, 1'772'323'200'000'000'000);
  EXPECT_TRUE(two.expect.empty());
  EXPECT_EQ(two.steps[0].time_ns, std::nullopt);  // the clock's time
}

TEST(TestSpecTest, EveryProblemIsNamedWithItsLine) {
  auto tests = ParseTests(R"(tests:
  - name: a
    input:
      - payload: {x: 1}
        time: yesterday
      - advance: soon
      - nothing: here
      - advance: 200h
    expect:
      - match: subset
  - input: []
    expect: maybe
)",
                          "t.yaml");
  ASSERT_FALSE(tests);
  const std::string m = tests.error().message();
  EXPECT_NE(m.find("t.yaml:5: \"yesterday\" is not a time"), std::string::npos) << m;
  EXPECT_NE(m.find("t.yaml:6: advance: a duration"), std::string::npos) << m;
  EXPECT_NE(m.find("t.yaml:7: unknown key \"nothing\" in an input step"), std::string::npos) << m;
  EXPECT_NE(m.find("t.yaml:8: advance: at most 168h (7 days) in one step"), std::string::npos) << m;
  EXPECT_NE(m.find("t.yaml:10: match: subset needs a payload map"), std::string::npos) << m;
  EXPECT_NE(m.find("t.yaml:11: a test needs a name"), std::string::npos) << m;
  EXPECT_NE(m.find("t.yaml:12: expect: a list of events, or `dropped`"), std::string::npos) << m;
}

TEST(TestSpecTest, NotATestsFile) {
  auto bad_yaml = ParseTests("tests: [", "t.yaml");
  ASSERT_FALSE(bad_yaml);
  EXPECT_NE(bad_yaml.error().message().find("t.yaml:"), std::string::npos);
  EXPECT_NE(bad_yaml.error().message().find("not valid YAML"), std::string::npos);
  auto no_list = ParseTests("sources: []", "t.yaml");
  ASSERT_FALSE(no_list);
  EXPECT_NE(no_list.error().message().find("a `tests:` list"), std::string::npos);
  auto missing = LoadTests("/nonexistent/t.yaml");
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error().code(), StatusCode::kNotFound);
}

}  // namespace
}  // namespace seedance::pipetest
