#include "sources/http/request_body.h"

#include <gtest/gtest.h>

namespace seedance::sources {
namespace {

std::vector<std::string> Split(std::string_view body, BodyFormat format = BodyFormat::kAuto,
                               std::string_view type = "application/json", size_t max = 100) {
  auto r = SplitBody(body, format, type, max);
  EXPECT_TRUE(r.has_value()) << (r ? "" : r.error().message());
  return r ? *r : std::vector<std::string>{};
}

TEST(RequestBodyTest, AnObjectIsOneEventKeptByteForByte) {
  EXPECT_EQ(Split(" {\"t\": 1.50, \"id\": \"a\"}\n"),
            std::vector<std::string>{"{\"t\": 1.50, \"id\": \"a\"}"});
}

TEST(RequestBodyTest, AnArrayIsOneEventPerElement) {
  EXPECT_EQ(Split(R"([{"t": 1}, {"t": 2, "s": "\u00e9"}, 3])"),
            (std::vector<std::string>{R"({"t":1})", "{\"t\":2,\"s\":\"\xc3\xa9\"}", "3"}));
  EXPECT_TRUE(Split("[]").empty());
}

TEST(RequestBodyTest, NdjsonByContentTypeOrOptionIsOneEventPerLine) {
  const std::string body = "{\"a\": 1}\n\n  {\"b\": 2}  \r\n[1,2]\n";
  const std::vector<std::string> want{"{\"a\": 1}", "{\"b\": 2}", "[1,2]"};
  EXPECT_EQ(Split(body, BodyFormat::kAuto, "application/x-ndjson; charset=utf-8"), want);
  EXPECT_EQ(Split(body, BodyFormat::kAuto, "Application/JSONL"), want);
  EXPECT_EQ(Split(body, BodyFormat::kNdjson, "application/json"), want);
  // As JSON, the same body is one value followed by garbage.
  EXPECT_FALSE(SplitBody(body, BodyFormat::kJson, "application/x-ndjson", 100).has_value());
}

TEST(RequestBodyTest, BadBodiesAreRefusedWithWhereAndWhy) {
  auto r = SplitBody("{\"a\": 1}\n{\"b\": }\n", BodyFormat::kNdjson, "", 100);
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(r.error().message().find("line 2: invalid JSON at offset"), std::string::npos)
      << r.error().message();
  EXPECT_FALSE(SplitBody("", BodyFormat::kAuto, "", 100).has_value());
  EXPECT_FALSE(SplitBody(" \n", BodyFormat::kNdjson, "", 100).has_value());
  auto deep =
      SplitBody(std::string(1000, '[') + std::string(1000, ']'), BodyFormat::kJson, "", 100);
  ASSERT_FALSE(deep.has_value());
  EXPECT_NE(deep.error().message().find("nested deeper"), std::string::npos);
}

TEST(RequestBodyTest, MoreEventsThanAllowedIsResourceExhausted) {
  auto array = SplitBody("[1,2,3]", BodyFormat::kJson, "", 2);
  ASSERT_FALSE(array.has_value());
  EXPECT_EQ(array.error().code(), StatusCode::kResourceExhausted);
  auto lines = SplitBody("1\n2\n3\n", BodyFormat::kNdjson, "", 2);
  ASSERT_FALSE(lines.has_value());
  EXPECT_EQ(lines.error().code(), StatusCode::kResourceExhausted);
  EXPECT_EQ(Split("1\n2\n", BodyFormat::kNdjson, "", 2).size(), 2u);
}

}  // namespace
}  // namespace seedance::sources
