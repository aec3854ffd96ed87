#include "processors/fields/fields_processor.h"

#include <gtest/gtest.h>

#include <string>

#include "testing/plugin_harness.h"

namespace seedance::processors {
namespace {

using seedance::testing::Harness;
using seedance::testing::JsonEvent;
using seedance::testing::ProcessorParams;
using seedance::testing::RecordingOutput;

class FieldsProcessorTest : public ::testing::Test {
 protected:
  Result<std::unique_ptr<Processor>> Make(const std::string& yaml) {
    auto ctx = harness_.Context("fields");
    return FieldsProcessorFactory().create(ProcessorParams("fields", yaml), ctx);
  }
  // The payload `fields` with `yaml` makes of `payload` (or the reason it refused it).
  std::string Apply(const std::string& yaml, const std::string& payload) {
    auto p = Make(yaml);
    EXPECT_TRUE(p.has_value()) << (p ? "" : p.error().message());
    if (!p) return "";
    RecordingOutput out;
    (*p)->Process(JsonEvent(payload), out);
    if (!out.side.empty()) return "error: " + out.side[0].reason;
    return out.main.empty() ? "" : out.main[0].payload;
  }
  Harness harness_;
};

TEST_F(FieldsProcessorTest, RenamesRemovesKeepsAndSetsInThatOrder) {
  EXPECT_EQ(Apply("rename: {temp: temperature, \"meta.id\": device}\n",
                  R"({"temp":21.5,"meta":{"id":"d1","fw":3},"ts":1})"),
            R"({"meta":{"fw":3},"ts":1,"temperature":21.5,"device":"d1"})");
  EXPECT_EQ(Apply("remove: [debug, meta.raw, absent.x]\n",
                  R"({"v":1,"debug":true,"meta":{"raw":"…","id":2}})"),
            R"({"v":1,"meta":{"id":2}})");
  EXPECT_EQ(Apply("keep: [device, meta.id]\n", R"({"device":"d1","v":1,"meta":{"id":2,"x":3}})"),
            R"({"device":"d1","meta":{"id":2}})");
  // Renamed before kept, set after: the order the parameters are applied in.
  EXPECT_EQ(Apply("rename: {t: temperature}\nkeep: [temperature]\nset: {unit: celsius}\n",
                  R"({"t":20,"junk":1})"),
            R"({"temperature":20,"unit":"celsius"})");
}

TEST_F(FieldsProcessorTest, SetTakesJsonValuesAsJsonAndTheRestAsStrings) {
  EXPECT_EQ(Apply("set: {a: 1.5, b: 'true', c: 'null', d: '\"42\"', e: '{\"x\":[1]}', f: hello "
                  "world, g.h: 7}\n",
                  R"({"a":0})"),
            R"({"a":1.5,"b":true,"c":null,"d":"42","e":{"x":[1]},"f":"hello world","g":{"h":7}})");
}

TEST_F(FieldsProcessorTest, AnEventItDoesNotChangeIsHandedOnByteForByte) {
  // A big integer and a spaced layout: rewritten, either would change.
  const std::string payload = R"({ "id" : 123456789012345678901234567890, "v": 1.10 })";
  EXPECT_EQ(Apply("remove: [absent]\nrename: {nope: other}\n", payload), payload);
  // 64-bit integers keep their value when the event is rewritten.
  EXPECT_EQ(
      Apply("remove: [x]\n", R"({"big":18446744073709551615,"neg":-9223372036854775808,"x":1})"),
      R"({"big":18446744073709551615,"neg":-9223372036854775808})");
}

TEST_F(FieldsProcessorTest, WhatCannotBeDoneGoesToErrorWithTheReason) {
  EXPECT_EQ(Apply("set: {a.b: 1}\n", R"({"a":3})"),
            "error: fields: set: cannot set \"a.b\": \"a\" is not an object");
  EXPECT_EQ(Apply("remove: [a]\n", "[1,2]"), "error: fields: the payload is not a JSON object");
  EXPECT_EQ(Apply("remove: [a]\n", "not json"), "error: fields: the payload is not a JSON object");
  auto raw = Make("remove: [a]\n");
  ASSERT_TRUE(raw.has_value());
  RecordingOutput out;
  Event e = JsonEvent(R"({"a":1})");
  e.format = PayloadFormat::kRaw;
  (*raw)->Process(std::move(e), out);
  ASSERT_EQ(out.side.size(), 1u);
  EXPECT_EQ(out.side[0].output, Output::kError);
}

TEST_F(FieldsProcessorTest, BadParametersAreRefusedWithTheirPlace) {
  auto none = Make("");
  ASSERT_FALSE(none.has_value());
  EXPECT_NE(none.error().message().find("give at least one of rename, remove, keep, set"),
            std::string::npos)
      << none.error().message();
  auto empty_name = Make("remove: [a..b]\n");
  ASSERT_FALSE(empty_name.has_value());
  EXPECT_NE(empty_name.error().message().find("remove: \"a..b\" has an empty field name"),
            std::string::npos)
      << empty_name.error().message();
}

TEST_F(FieldsProcessorTest, AReloadTakesTheNewOperations) {
  auto p = Make("set: {v: 1}\n");
  ASSERT_TRUE(p.has_value());
  ASSERT_FALSE((*p)->Reconfigure(ProcessorParams("fields", "keep: [.x]\n"), false).ok());
  ASSERT_TRUE((*p)->Reconfigure(ProcessorParams("fields", "set: {v: 2}\n"), true).ok());
  RecordingOutput out;
  (*p)->Process(JsonEvent("{}"), out);
  ASSERT_EQ(out.main.size(), 1u);
  EXPECT_EQ(out.main[0].payload, R"({"v":2})");
}

}  // namespace
}  // namespace seedance::processors
