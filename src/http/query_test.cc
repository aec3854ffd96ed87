#include "http/query.h"

#include <gtest/gtest.h>

namespace seedance::http {
namespace {

TEST(QueryTest, SplitsAndDecodesInOrder) {
  auto q = ParseQuery("/tap?component=a&component=b%20c&topic=plant%2F%23&x&sample=1+2");
  ASSERT_TRUE(q.has_value());
  EXPECT_EQ(*q, (QueryParams{{"component", "a"},
                             {"component", "b c"},
                             {"topic", "plant/#"},
                             {"x", ""},
                             {"sample", "1 2"}}));
  EXPECT_EQ(TargetPath("/tap?x=1"), "/tap");
  EXPECT_EQ(TargetPath("/metrics"), "/metrics");
  EXPECT_TRUE(ParseQuery("/metrics")->empty());
}

TEST(QueryTest, AMalformedEscapeIsRefused) {
  EXPECT_FALSE(ParseQuery("/tap?a=%2").has_value());
  EXPECT_FALSE(ParseQuery("/tap?a=%zz").has_value());
  EXPECT_FALSE(ParseQuery("/tap?a=%").has_value());
}

TEST(QueryTest, EncodingRoundTrips) {
  const std::string text = "plant/+/#&x=1 %";
  auto q = ParseQuery("/?t=" + EncodeQueryValue(text));
  ASSERT_TRUE(q.has_value());
  EXPECT_EQ((*q)[0].second, text);
}

}  // namespace
}  // namespace seedance::http
