#include "util/units.h"

#include <gtest/gtest.h>

#include "util/strings.h"

namespace seedance::util {
namespace {

TEST(UnitsTest, ParsesDurations) {
  EXPECT_EQ(*ParseDuration("250ms"), std::chrono::milliseconds(250));
  EXPECT_EQ(*ParseDuration("1.5s"), std::chrono::milliseconds(1500));
  EXPECT_EQ(*ParseDuration("2m"), std::chrono::minutes(2));
  EXPECT_EQ(*ParseDuration("0"), std::chrono::nanoseconds(0));
  EXPECT_FALSE(ParseDuration("5").has_value());
  EXPECT_FALSE(ParseDuration("5 parsecs").has_value());
  EXPECT_FALSE(ParseDuration("ms").has_value());
}

TEST(UnitsTest, ParsesSizes) {
  EXPECT_EQ(*ParseSize("4096"), 4096u);
  EXPECT_EQ(*ParseSize("64MiB"), 64u * 1024 * 1024);
  EXPECT_EQ(*ParseSize("16 MB"), 16'000'000u);
  EXPECT_EQ(*ParseSize("1.5KiB"), 1536u);
  EXPECT_FALSE(ParseSize("lots").has_value());
  EXPECT_FALSE(ParseSize("3 parsecs").has_value());
}

// These wrapped to negative durations (and huge sizes to nonsense) before.
TEST(UnitsTest, RefusesDurationsAndSizesOutOfRange) {
  for (const std::string& text : {std::string("9223372037s"), std::string("99999999999999999h"),
                                  std::string(400, '9') + "s"}) {
    auto d = ParseDuration(text);
    ASSERT_FALSE(d.has_value()) << text;
    EXPECT_NE(d.error().message().find("out of range"), std::string::npos) << text;
  }
  EXPECT_TRUE(ParseDuration("9223372036s").has_value());  // just under 2^63 ns
  EXPECT_FALSE(ParseSize("99999999999GiB").has_value());
  EXPECT_FALSE(ParseSize("18446744073709551616").has_value());
}

TEST(StringsTest, SuggestsCloseMatchesOnly) {
  EXPECT_EQ(ClosestMatch("topik", {"topic", "uri", "qos"}), "topic");
  EXPECT_EQ(ClosestMatch("endpont", {"endpoint", "method"}), "endpoint");
  EXPECT_EQ(ClosestMatch("zzzzzz", {"topic", "uri"}), "");
}

TEST(StringsTest, EscapesJsonStrings) {
  std::string out;
  AppendJsonString(out, std::string("a\"b\\c\n\x01", 7));
  EXPECT_EQ(out, "\"a\\\"b\\\\c\\n\\u0001\"");
}

}  // namespace
}  // namespace seedance::util
