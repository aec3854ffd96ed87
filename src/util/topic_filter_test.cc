#include "util/topic_filter.h"

#include <gtest/gtest.h>

namespace seedance::util {
namespace {

TEST(TopicTest, MatchesWildcardsAsTheSpecSays) {
  EXPECT_TRUE(TopicMatches("sensor/+/temperature", "sensor/7/temperature"));
  EXPECT_FALSE(TopicMatches("sensor/+/temperature", "sensor/7/8/temperature"));
  EXPECT_TRUE(TopicMatches("sensor/#", "sensor/7/temperature"));
  EXPECT_TRUE(TopicMatches("sensor/#", "sensor"));
  EXPECT_TRUE(TopicMatches("#", "a/b"));
  EXPECT_FALSE(TopicMatches("#", "$SYS/broker"));
  EXPECT_FALSE(TopicMatches("+/broker", "$SYS/broker"));
  EXPECT_TRUE(TopicMatches("+/+", "/finance"));
  EXPECT_TRUE(TopicMatches("a/+", "a/"));
  EXPECT_FALSE(TopicMatches("a/b", "a/b/c"));
}

TEST(TopicTest, ValidatesFilters) {
  EXPECT_TRUE(ValidateTopicFilter("sensor/+/temperature").ok());
  EXPECT_TRUE(ValidateTopicFilter("#").ok());
  EXPECT_TRUE(ValidateTopicFilter("$share/workers/sensor/#").ok());
  EXPECT_FALSE(ValidateTopicFilter("").ok());
  EXPECT_FALSE(ValidateTopicFilter("a/b#").ok());
  EXPECT_FALSE(ValidateTopicFilter("a/#/b").ok());
  EXPECT_FALSE(ValidateTopicFilter("a+/b").ok());
  EXPECT_FALSE(ValidateTopicFilter("$share//x").ok());
  EXPECT_FALSE(ValidateTopicFilter("$share/g").ok());
}

}  // namespace
}  // namespace seedance::util
