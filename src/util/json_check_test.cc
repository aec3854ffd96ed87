#include "util/json_check.h"

#include <gtest/gtest.h>

namespace seedance {
namespace {

TEST(JsonCheckTest, AcceptsJsonAndRejectsTheRestWithAnOffset) {
  EXPECT_TRUE(CheckJson(R"({"a": [1, 2.5, null, "x"]} )").ok());
  EXPECT_TRUE(CheckJson("42").ok());
  Status s = CheckJson("{\"a\": 1} trailing");
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("offset 9"), std::string::npos) << s.message();
  EXPECT_FALSE(CheckJson("").ok());
  EXPECT_FALSE(CheckJson("not json").ok());
  EXPECT_FALSE(CheckJson("{\"a\": \"\xff\"}").ok());  // invalid UTF-8
}

std::string Nested(int depth, const char* open, const char* close) {
  std::string s;
  for (int i = 0; i < depth; ++i) s += open;
  s += "1";
  for (int i = 0; i < depth; ++i) s += close;
  return s;
}

TEST(JsonCheckTest, NestingUpToTheLimitIsAcceptedAndDeeperIsRefusedWithAReason) {
  EXPECT_TRUE(CheckJson(Nested(kMaxJsonDepth, "[", "]")).ok());
  EXPECT_TRUE(CheckJson(Nested(kMaxJsonDepth, "{\"a\":", "}")).ok());
  Status s = CheckJson(Nested(kMaxJsonDepth + 1, "[", "]"));
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("nested deeper than 128 levels"), std::string::npos) << s.message();
}

// A million '[' crashed the process (recursive parse out of stack): now an error, at once.
TEST(JsonCheckTest, AMillionOpenBracketsAreAnErrorNotACrash) {
  const std::string brackets(1'000'000, '[');
  Status s = CheckJson(brackets);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("nested deeper"), std::string::npos) << s.message();
  EXPECT_EQ(CheckJson(Nested(200'000, "[", "]")).code(), StatusCode::kInvalidArgument);
}

TEST(JsonCheckTest, ParseJsonBuildsTheDocumentWithTheSameRules) {
  rapidjson::Document doc;
  ASSERT_TRUE(ParseJson(R"({"a": [1, {"b": null}]})", doc).ok());
  EXPECT_EQ(doc["a"][1]["b"].IsNull(), true);
  rapidjson::Document deep;
  Status s = ParseJson(std::string(1'000'000, '['), deep);
  EXPECT_NE(s.message().find("nested deeper"), std::string::npos) << s.message();
  rapidjson::Document trailing;
  EXPECT_FALSE(ParseJson("[1] x", trailing).ok());
}

}  // namespace
}  // namespace seedance

namespace seedance {
namespace {

// Found by the json_check fuzz target: RapidJSON decodes a lone trailing surrogate escape
// into bytes that are not UTF-8, which then reached Lua and the sinks.
TEST(JsonCheckSurrogateTest, UnpairedSurrogatesAreRefusedPairsAccepted) {
  EXPECT_TRUE(CheckJson(R"({"c": "\ud83d\ude00"})").ok());
  for (const char* bad :
       {R"({"c": "\udc00"})", R"(["\ude00x"])", R"({"\udfff": 1})", R"({"c": "\ud83d"})"}) {
    Status s = CheckJson(bad);
    EXPECT_FALSE(s.ok()) << bad;
  }
  EXPECT_NE(CheckJson(R"({"c": "\udc00"})").message().find("unpaired UTF-16 surrogate"),
            std::string::npos);
}

// Also found by the fuzz target: a number RapidJSON rounds to infinity was accepted.
TEST(JsonCheckSurrogateTest, NumbersBeyondDoubleRangeAreRefused) {
  EXPECT_TRUE(CheckJson("[1.7976931348623157e308, -1e-400, 1e308]").ok());
  Status s = CheckJson(R"({"k": 1111111111111111111111e308})");
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("out of range"), std::string::npos) << s.message();
}

}  // namespace
}  // namespace seedance
