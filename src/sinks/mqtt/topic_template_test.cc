#include "sinks/mqtt/topic_template.h"

#include <gtest/gtest.h>

namespace seedance::sinks {
namespace {

Event TopicEvent(std::string topic, std::string payload, PayloadFormat f = PayloadFormat::kJson) {
  Event e;
  e.topic = std::move(topic);
  e.payload = std::move(payload);
  e.format = f;
  return e;
}

std::string Render(std::string_view tmpl, const Event& e, std::string* why = nullptr) {
  auto t = TopicTemplate::Parse(tmpl);
  EXPECT_TRUE(t.has_value()) << tmpl;
  std::string out, reason;
  if (!t->Render(e, &out, &reason)) {
    if (why) *why = reason;
    return "<unfilled>";
  }
  return out;
}

TEST(TopicTemplateTest, FillsTopicLevelsPayloadFieldsAndHeaders) {
  Event e = TopicEvent(
      "sensor/abc/temperature",
      R"({"device":"d-7","site":{"id":42,"ok":true},"v":21.5,"big":18446744073709551615})");
  e.SetHeader("region", "eu");
  EXPECT_EQ(Render("site/42/{topic.2}/{payload.device}", e), "site/42/abc/d-7");
  EXPECT_EQ(Render("relay/{topic}", e), "relay/sensor/abc/temperature");
  EXPECT_EQ(Render("{topic.1}/{topic.3}", e), "sensor/temperature");
  EXPECT_EQ(Render("s/{payload.site.id}/{payload.site.ok}/{payload.v}", e), "s/42/true/21.5");
  EXPECT_EQ(Render("{payload.big}", e), "18446744073709551615");
  EXPECT_EQ(Render("{header.region}/x", e), "eu/x");
  EXPECT_EQ(Render("a{{b}}c", e), "a{b}c");
  EXPECT_EQ(Render("fixed/topic", e), "fixed/topic");
  EXPECT_TRUE(TopicTemplate::Parse("fixed/topic")->is_constant());
  EXPECT_FALSE(TopicTemplate::Parse("x/{topic}")->is_constant());
}

TEST(TopicTemplateTest, SaysWhyAnEventCannotFillIt) {
  Event e = TopicEvent("a/b", R"({"obj":{},"arr":[1],"nul":null,"empty":"","wild":"x/+/y"})");
  std::string why;
  EXPECT_EQ(Render("{topic.3}", e, &why), "<unfilled>");
  EXPECT_EQ(why, "topic template: topic \"a/b\" has no level 3");
  EXPECT_EQ(Render("{payload.missing}", e, &why), "<unfilled>");
  EXPECT_EQ(why, "topic template: the payload has no field payload.missing");
  for (const char* f : {"obj", "arr", "nul"}) {
    EXPECT_EQ(Render(std::string("{payload.") + f + "}", e, &why), "<unfilled>");
    EXPECT_EQ(why,
              std::string("topic template: payload.") + f + " is not a string, number or boolean");
  }
  EXPECT_EQ(Render("x/{payload.empty}", e, &why), "<unfilled>");
  EXPECT_EQ(why, "topic template: a placeholder's value is empty");
  EXPECT_EQ(Render("{payload.wild}", e, &why), "<unfilled>");
  EXPECT_NE(why.find("is not a valid topic name"), std::string::npos) << why;
  EXPECT_EQ(Render("{header.none}", e, &why), "<unfilled>");
  EXPECT_EQ(why, "topic template: the event has no header \"none\"");
  // A payload that is not JSON (or not an object) has no fields.
  EXPECT_EQ(Render("{payload.a}", TopicEvent("t", "raw bytes", PayloadFormat::kRaw), &why),
            "<unfilled>");
  EXPECT_EQ(Render("{payload.a}", TopicEvent("t", "[1,2]"), &why), "<unfilled>");
  // A hostile depth is parsed without recursion.
  const std::string deep = std::string(100000, '[') + std::string(100000, ']');
  EXPECT_EQ(Render("{payload.a}", TopicEvent("t", deep), &why), "<unfilled>");
}

TEST(TopicTemplateTest, RefusesBadTemplatesWithTheReason) {
  auto error = [](std::string_view t) {
    auto r = TopicTemplate::Parse(t);
    return r.has_value() ? std::string("<parsed>") : r.error().message();
  };
  EXPECT_EQ(error(""), "the topic template is empty");
  EXPECT_NE(error("a/+/b").find("wildcards"), std::string::npos);
  EXPECT_NE(error("a/#").find("wildcards"), std::string::npos);
  EXPECT_NE(error("a/{topic").find("unclosed"), std::string::npos);
  EXPECT_NE(error("a/}").find("unmatched"), std::string::npos);
  EXPECT_NE(error("{nope}").find("unknown placeholder {nope}"), std::string::npos);
  EXPECT_NE(error("{topic.0}").find("from 1"), std::string::npos);
  EXPECT_NE(error("{topic.x}").find("from 1"), std::string::npos);
  EXPECT_NE(error("{payload.a..b}").find("empty field name"), std::string::npos);
  EXPECT_NE(error(std::string("a\0b", 3)).find("wildcards"), std::string::npos);
}

}  // namespace
}  // namespace seedance::sinks
