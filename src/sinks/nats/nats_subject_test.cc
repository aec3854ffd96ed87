#include "sinks/nats/nats_subject.h"

#include <gtest/gtest.h>

namespace seedance::sinks {
namespace {

TEST(NatsSubjectTest, TakesDottedTokens) {
  EXPECT_EQ(CheckNatsSubject("telemetry"), "");
  EXPECT_EQ(CheckNatsSubject("site.42.climate"), "");
  EXPECT_EQ(CheckNatsSubject("a-b_c.d/e"), "");
}

TEST(NatsSubjectTest, RefusesEmptyTokensWhitespaceAndWildcards) {
  for (const char* bad : {"", ".a", "a.", "a..b", "a b", "a\tb", "a.*", "a.>", "a*b"}) {
    EXPECT_NE(CheckNatsSubject(bad), "") << bad;
  }
  EXPECT_NE(CheckNatsSubject(std::string("a\0b", 3)), "");
  EXPECT_NE(CheckNatsSubject("\xff"), "");
}

}  // namespace
}  // namespace seedance::sinks
