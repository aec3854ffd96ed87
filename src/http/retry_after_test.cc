#include "http/retry_after.h"

#include <gtest/gtest.h>

namespace seedance::http {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

// 1994-11-06T08:49:37Z, the example date of RFC 9110.
const auto kNow = std::chrono::system_clock::from_time_t(784111777);

TEST(RetryAfterTest, ReadsSecondsAndSaturatesHugeValues) {
  EXPECT_EQ(ParseRetryAfter("120", kNow), milliseconds(120000));
  EXPECT_EQ(ParseRetryAfter(" 0 ", kNow), milliseconds(0));
  auto huge = ParseRetryAfter("99999999999999999999999999", kNow);
  ASSERT_TRUE(huge.has_value());
  EXPECT_GT(*huge, std::chrono::hours(24 * 365));
}

TEST(RetryAfterTest, ReadsTheThreeHttpDateForms) {
  EXPECT_EQ(ParseRetryAfter("Sun, 06 Nov 1994 08:50:37 GMT", kNow), milliseconds(60000));
  EXPECT_EQ(ParseRetryAfter("Sunday, 06-Nov-94 08:49:47 GMT", kNow), milliseconds(10000));
  EXPECT_EQ(ParseRetryAfter("Sun Nov  6 08:49:39 1994", kNow), milliseconds(2000));
  // Far future dates saturate instead of overflowing nanoseconds (UBSan).
  auto far = ParseRetryAfter("Fri, 31 Dec 9999 23:59:59 GMT", kNow);
  ASSERT_TRUE(far.has_value());
  EXPECT_GT(*far, std::chrono::hours(24 * 365 * 1000));
  // A date in the past means "now".
  EXPECT_EQ(ParseRetryAfter("Sat, 05 Nov 1994 08:49:37 GMT", kNow), milliseconds(0));
}

TEST(RetryAfterTest, RefusesAnythingElse) {
  EXPECT_FALSE(ParseRetryAfter("", kNow).has_value());
  EXPECT_FALSE(ParseRetryAfter("-5", kNow).has_value());
  EXPECT_FALSE(ParseRetryAfter("1.5", kNow).has_value());
  EXPECT_FALSE(ParseRetryAfter("soon", kNow).has_value());
  EXPECT_FALSE(ParseRetryAfter("Sun, 06 Nov 1994 08:50:37 GMT trailing", kNow).has_value());
}

}  // namespace
}  // namespace seedance::http
