#include "mqtt/broker_uri.h"

#include <gtest/gtest.h>

namespace seedance {
namespace {

TEST(BrokerUriTest, ParsesSchemesAndDefaultPorts) {
  auto a = mqtt::ParseBrokerUri("tcp://broker.local:1883");
  ASSERT_TRUE(a.has_value());
  EXPECT_EQ(a->host, "broker.local");
  EXPECT_FALSE(a->tls);
  auto b = mqtt::ParseBrokerUri("ssl://h");
  ASSERT_TRUE(b.has_value());
  EXPECT_TRUE(b->tls);
  EXPECT_EQ(b->port, 8883);
  EXPECT_FALSE(mqtt::ParseBrokerUri("http://h").has_value());
  EXPECT_FALSE(mqtt::ParseBrokerUri("tcp://h:0").has_value());
  EXPECT_FALSE(mqtt::ParseBrokerUri("tcp://h/path").has_value());
}

}  // namespace
}  // namespace seedance
