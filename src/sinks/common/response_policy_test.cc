#include "sinks/common/response_policy.h"

#include <gtest/gtest.h>

namespace seedance::sinks {
namespace {

using Kind = ResponseVerdict::Kind;
using std::chrono::milliseconds;

ResponseVerdict Classify(unsigned code, std::optional<std::string_view> retry_after = {},
                         std::string_view body = "") {
  return ClassifyResponse(code, "Reason", body, retry_after, std::chrono::system_clock::now());
}

TEST(ResponsePolicyTest, EachStatusClassHasItsOutcome) {
  EXPECT_EQ(Classify(200).kind, Kind::kDelivered);
  EXPECT_EQ(Classify(204).kind, Kind::kDelivered);
  EXPECT_EQ(Classify(400).kind, Kind::kRejected);
  EXPECT_EQ(Classify(301).kind, Kind::kRejected);
  EXPECT_EQ(Classify(408).kind, Kind::kRetry);
  EXPECT_EQ(Classify(500).kind, Kind::kRetry);
  EXPECT_EQ(Classify(413).kind, Kind::kTooLarge);  // the runner splits, or rejects one event
  EXPECT_TRUE(Classify(429).backpressure);
  EXPECT_TRUE(Classify(503).backpressure);
  EXPECT_FALSE(Classify(500).backpressure);
}

TEST(ResponsePolicyTest, RetryAfterIsTheServersDelay) {
  EXPECT_EQ(Classify(429, "2").retry_after, milliseconds(2000));
  EXPECT_EQ(Classify(429, "3600").retry_after, milliseconds(3600000));  // the runner caps it
  EXPECT_EQ(Classify(503, "soon").retry_after, milliseconds(0));
  EXPECT_EQ(Classify(400, "5").retry_after, milliseconds(0));  // not retried at all
}

TEST(ResponsePolicyTest, TheReasonIsOneBoundedLine) {
  ResponseVerdict v = Classify(400, {}, "line one\nline two\x1b[2J" + std::string(5000, 'x'));
  EXPECT_EQ(v.what.find('\n'), std::string::npos);
  EXPECT_EQ(v.what.find('\x1b'), std::string::npos);
  EXPECT_LT(v.what.size(), 300u);
  EXPECT_EQ(v.what.rfind("HTTP 400 Reason: line one\\nline two", 0), 0u) << v.what;
}

}  // namespace
}  // namespace seedance::sinks
