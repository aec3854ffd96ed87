#include "util/http_url.h"

#include <gtest/gtest.h>

#include "mqtt/broker_uri.h"

namespace seedance::util {
namespace {

TEST(HttpUrlTest, ParsesHostPortAndTarget) {
  auto u = ParseHttpUrl("http://api.example.com/v1/metrics?x=1");
  ASSERT_TRUE(u.has_value());
  EXPECT_EQ(u->host, "api.example.com");
  EXPECT_EQ(u->port, 80);
  EXPECT_EQ(u->target, "/v1/metrics?x=1");
  EXPECT_EQ(u->HostHeader(), "api.example.com");
  auto t = ParseHttpUrl("https://[::1]:8443");
  ASSERT_TRUE(t.has_value());
  EXPECT_TRUE(t->tls);
  EXPECT_EQ(t->host, "::1");
  EXPECT_EQ(t->target, "/");
  EXPECT_EQ(t->HostHeader(), "[::1]:8443");
  EXPECT_FALSE(ParseHttpUrl("ftp://x/").has_value());
  EXPECT_FALSE(ParseHttpUrl("http://:80/").has_value());
  EXPECT_FALSE(ParseHttpUrl("http://h:99999/").has_value());
}

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
}  // namespace seedance::util
