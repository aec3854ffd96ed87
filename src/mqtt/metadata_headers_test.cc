#include "mqtt/metadata_headers.h"

#include <gtest/gtest.h>

namespace seedance::mqtt {
namespace {

TEST(MetadataHeadersTest, EveryPropertyBecomesAHeaderAndComesBack) {
  Properties in = {{.id = prop::kContentType, .text = "application/json"},
                   {.id = prop::kPayloadFormat, .number = 1},
                   {.id = prop::kMessageExpiry, .number = 30},
                   {.id = prop::kResponseTopic, .text = "reply/7"},
                   {.id = prop::kCorrelationData, .text = std::string("\x00\xff id", 5)},
                   {.id = prop::kUserProperty, .text = "site", .value = "north"},
                   {.id = prop::kUserProperty, .text = "site", .value = "south"},
                   {.id = prop::kTopicAlias, .number = 3}};  // not metadata
  Event e;
  EXPECT_EQ(PropertiesToHeaders(in, &e), 0u);
  ASSERT_NE(e.FindHeader("mqtt_content_type"), nullptr);
  EXPECT_EQ(*e.FindHeader("mqtt_content_type"), "application/json");
  EXPECT_EQ(*e.FindHeader("mqtt_payload_format"), "1");
  EXPECT_EQ(*e.FindHeader("mqtt_message_expiry"), "30");
  EXPECT_EQ(*e.FindHeader("mqtt_response_topic"), "reply/7");
  EXPECT_EQ(*e.FindHeader("mqtt_correlation_data"), "AP8gaWQ=");
  EXPECT_EQ(e.headers.size(), 7u);  // both "site" values

  Properties out;
  HeadersToProperties(e, &out);
  Properties expected(in.begin(), in.end() - 1);
  EXPECT_EQ(out, expected);
}

TEST(MetadataHeadersTest, TraceContextKeepsItsW3CNamesBothWays) {
  const std::string parent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
  Properties in = {{.id = prop::kUserProperty, .text = "traceparent", .value = parent},
                   {.id = prop::kUserProperty, .text = "tracestate", .value = "a=1"},
                   {.id = prop::kUserProperty, .text = "site", .value = "north"}};
  Event e;
  EXPECT_EQ(PropertiesToHeaders(in, &e), 0u);
  ASSERT_NE(e.FindHeader("traceparent"), nullptr);
  EXPECT_EQ(*e.FindHeader("traceparent"), parent);
  EXPECT_EQ(*e.FindHeader("tracestate"), "a=1");
  EXPECT_EQ(e.FindHeader("mqtt_user_traceparent"), nullptr);
  Properties out;
  HeadersToProperties(e, &out);
  EXPECT_EQ(out, in);  // the same user properties, sent on
  // A traceparent set by a script or taken from HTTP goes out the same way.
  Event scripted;
  scripted.SetHeader("traceparent", parent);
  out.clear();
  HeadersToProperties(scripted, &out);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].text, "traceparent");
}

TEST(MetadataHeadersTest, ManyUserPropertiesAreCappedAndBadHeadersLeftOut) {
  Properties in;
  for (int i = 0; i < 100; ++i) {
    in.push_back({.id = prop::kUserProperty, .text = "k" + std::to_string(i), .value = "v"});
  }
  Event e;
  EXPECT_EQ(PropertiesToHeaders(in, &e), 100 - kMaxUserProperties);
  EXPECT_EQ(e.headers.size(), kMaxUserProperties);

  Event bad;
  bad.SetHeader("mqtt_response_topic", "a/+/b");
  bad.SetHeader("mqtt_correlation_data", "not base64!");
  bad.SetHeader("mqtt_message_expiry", "-4");
  bad.SetHeader("mqtt_payload_format", "7");
  bad.SetHeader("other", "x");
  Properties out;
  HeadersToProperties(bad, &out);
  EXPECT_TRUE(out.empty());
  // The sink's own settings are not overridden by the event's.
  Event typed;
  typed.SetHeader("mqtt_content_type", "text/plain");
  Properties own = {{.id = prop::kContentType, .text = "application/json"}};
  HeadersToProperties(typed, &own);
  ASSERT_EQ(own.size(), 1u);
  EXPECT_EQ(own[0].text, "application/json");
}

}  // namespace
}  // namespace seedance::mqtt
