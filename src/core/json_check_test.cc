#include "core/json_check.h"

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

}  // namespace
}  // namespace seedance
