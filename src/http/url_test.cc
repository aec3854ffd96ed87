#include "http/url.h"

#include <gtest/gtest.h>

namespace seedance::http {
namespace {

TEST(UrlTest, ParsesHostPortAndTarget) {
  auto u = ParseUrl("http://api.example.com/v1/metrics?x=1");
  ASSERT_TRUE(u.has_value());
  EXPECT_EQ(u->host, "api.example.com");
  EXPECT_EQ(u->port, 80);
  EXPECT_EQ(u->target, "/v1/metrics?x=1");
  EXPECT_EQ(u->HostHeader(), "api.example.com");
  auto t = ParseUrl("https://[::1]:8443");
  ASSERT_TRUE(t.has_value());
  EXPECT_TRUE(t->tls);
  EXPECT_EQ(t->host, "::1");
  EXPECT_EQ(t->target, "/");
  EXPECT_EQ(t->HostHeader(), "[::1]:8443");
  EXPECT_FALSE(ParseUrl("ftp://x/").has_value());
  EXPECT_FALSE(ParseUrl("http://:80/").has_value());
  EXPECT_FALSE(ParseUrl("http://h:99999/").has_value());
}

}  // namespace
}  // namespace seedance::http
