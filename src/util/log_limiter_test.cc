// LogLimiter: once per interval per key with the held-back count, and bounded whatever keys
// come (a side output's reason quotes payloads). Time is driven by the test.
#include "util/log_limiter.h"

#include <gtest/gtest.h>

#include <string>

namespace seedance::util {
namespace {

using std::chrono::seconds;
constexpr auto kInterval = seconds(10);
const LogLimiter::Clock::time_point kStart{seconds(1000)};

// A key of letters only: "a", "b", ..., "z", "ba", ...
std::string Letters(size_t n) {
  std::string s;
  do {
    s.insert(s.begin(), static_cast<char>('a' + n % 26));
    n /= 26;
  } while (n > 0);
  return s;
}

TEST(LogLimiterTest, LetsOneLineThroughPerIntervalAndCountsTheRest) {
  LogLimiter limiter(kInterval);
  uint64_t suppressed = 99;
  EXPECT_TRUE(limiter.Allow("open", &suppressed, kStart));
  EXPECT_EQ(suppressed, 0u);
  EXPECT_FALSE(limiter.Allow("open", &suppressed, kStart + seconds(1)));
  EXPECT_FALSE(limiter.Allow("open", &suppressed, kStart + seconds(9)));
  EXPECT_TRUE(limiter.Allow("list", &suppressed, kStart + seconds(9)));  // keys are apart
  EXPECT_EQ(suppressed, 0u);
  EXPECT_TRUE(limiter.Allow("open", &suppressed, kStart + kInterval));
  EXPECT_EQ(suppressed, 2u);  // held back since the last line
  EXPECT_FALSE(limiter.Allow("open", &suppressed, kStart + kInterval + seconds(1)));
  EXPECT_TRUE(limiter.Allow("open", &suppressed, kStart + seconds(30)));
  EXPECT_EQ(suppressed, 1u);
}

// A stream of distinct keys (each reason different) at any rate: at most kMaxKeys + 1 lines
// per interval, and at most kMaxKeys keys held. Before, each key was a new line and a new
// map entry, forever.
TEST(LogLimiterTest, DistinctKeysAreBoundedInLinesAndMemory) {
  LogLimiter limiter(kInterval);
  uint64_t suppressed = 0;
  size_t allowed = 0;
  for (size_t i = 0; i < 10 * LogLimiter::kMaxKeys; ++i) {
    if (limiter.Allow(Letters(i), &suppressed, kStart)) ++allowed;
  }
  EXPECT_EQ(allowed, LogLimiter::kMaxKeys + 1);  // the last one for all the new keys
  EXPECT_EQ(limiter.keys(), LogLimiter::kMaxKeys);
  // The shared slot reports what it held back.
  EXPECT_TRUE(limiter.Allow("another", &suppressed, kStart + kInterval));
  EXPECT_EQ(suppressed, 9 * LogLimiter::kMaxKeys - 1);
  EXPECT_LE(limiter.keys(), LogLimiter::kMaxKeys);
}

// A key let through and not seen again is forgotten once its interval is over: new keys get
// their own line again. One with lines held back is kept until it reports them.
TEST(LogLimiterTest, IdleKeysAreForgottenAndHeldBackCountsAreNot) {
  LogLimiter limiter(kInterval);
  uint64_t suppressed = 0;
  ASSERT_TRUE(limiter.Allow("held", &suppressed, kStart));
  EXPECT_FALSE(limiter.Allow("held", &suppressed, kStart + seconds(1)));
  for (size_t i = 1; i < LogLimiter::kMaxKeys; ++i) {
    ASSERT_TRUE(limiter.Allow(Letters(i + 1000), &suppressed, kStart));
  }
  ASSERT_EQ(limiter.keys(), LogLimiter::kMaxKeys);
  // An interval later the idle keys make room: each new key has its own line again.
  const auto later = kStart + kInterval;
  EXPECT_TRUE(limiter.Allow("new-one", &suppressed, later));
  EXPECT_TRUE(limiter.Allow("new-two", &suppressed, later));
  EXPECT_EQ(limiter.keys(), 3u);  // held, new-one, new-two
  EXPECT_TRUE(limiter.Allow("held", &suppressed, later));
  EXPECT_EQ(suppressed, 1u);
}

}  // namespace
}  // namespace seedance::util
