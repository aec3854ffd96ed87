#include "mqtt/reason_codes.h"

#include <gtest/gtest.h>

namespace seedance::mqtt {
namespace {

TEST(ReasonCodesTest, SayWhatTheBrokerMeant) {
  EXPECT_EQ(ConnackReasonText(Version::kV311, 4), "bad user name or password");
  EXPECT_EQ(ConnackReasonText(Version::kV5, 0x86), "bad user name or password");
  EXPECT_EQ(ConnackReasonText(Version::kV5, 0x9f), "reason code 0x9f");
  EXPECT_EQ(DisconnectReasonText(0x8B), "server shutting down");
  EXPECT_EQ(DisconnectReasonText(0x01), "reason code");
  EXPECT_EQ(SubackReasonText(0x87), "not authorized");
  EXPECT_EQ(SubackReasonText(0x99), "refused");
  EXPECT_EQ(std::string(PublishReasonText(0x97)), "quota exceeded");
  EXPECT_EQ(std::string(PublishReasonText(0x42)), "refused");
}

}  // namespace
}  // namespace seedance::mqtt
