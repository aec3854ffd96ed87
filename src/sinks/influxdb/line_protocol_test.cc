#include "sinks/influxdb/line_protocol.h"

#include <gtest/gtest.h>

namespace seedance::sinks {
namespace {

Event LineEvent(std::string topic, std::string payload, int64_t time_ns = 1700000000123456789) {
  Event e;
  e.topic = std::move(topic);
  e.payload = std::move(payload);
  e.event_time_ns = time_ns;
  return e;
}

PointMapping Mapping(std::string measurement,
                     std::vector<std::pair<std::string, std::string>> tags = {},
                     std::vector<std::string> fields = {},
                     Precision precision = Precision::kNanoseconds) {
  auto m = MakePointMapping(measurement, tags, fields, precision);
  EXPECT_TRUE(m.has_value()) << m.error().message();
  return std::move(*m);
}

std::string Point(const PointMapping& m, const Event& e, std::string* why = nullptr) {
  std::string out = "kept|", reason;
  if (!AppendPoint(m, e, out, &reason)) {
    EXPECT_EQ(out, "kept|") << "a failed point leaves nothing behind";
    if (why) *why = reason;
    return "<failed>";
  }
  return out.substr(5);
}

TEST(LineProtocolTest, MapsMeasurementTagsFieldsAndTime) {
  const auto m = Mapping("{topic.1}", {{"site", "{topic.2}"}, {"device", "{payload.device}"}});
  const Event e =
      LineEvent("climate/north", R"({"device":"d-7","t":21.5,"n":3,"ok":true,"s":"run"})");
  // Tags sorted by key; the payload field a tag takes is no field; numbers as floats.
  EXPECT_EQ(Point(m, e),
            "climate,device=d-7,site=north t=21.5,n=3,ok=true,s=\"run\" "
            "1700000000123456789\n");
}

TEST(LineProtocolTest, EscapesWhatEachPartNeeds) {
  const auto m = Mapping("m {topic}", {{"k ey", "{payload.tag}"}});
  const Event e = LineEvent("a,b", R"({"tag":"v=1, x","f,= k":"say \"hi\" \\ now\nthen"})");
  EXPECT_EQ(Point(m, e),
            "m\\ a\\,b,k\\ ey=v\\=1\\,\\ x f\\,\\=\\ k=\"say \\\"hi\\\" \\\\ now\nthen\" "
            "1700000000123456789\n");
}

TEST(LineProtocolTest, PrecisionDividesTheEventTime) {
  const Event e = LineEvent("t", R"({"v":1})", 1700000000987654321);
  EXPECT_EQ(Point(Mapping("m", {}, {}, Precision::kMicroseconds), e), "m v=1 1700000000987654\n");
  EXPECT_EQ(Point(Mapping("m", {}, {}, Precision::kMilliseconds), e), "m v=1 1700000000987\n");
  EXPECT_EQ(Point(Mapping("m", {}, {}, Precision::kSeconds), e), "m v=1 1700000000\n");
}

TEST(LineProtocolTest, NamedFieldsByPathAndMissingOnesLeftOut) {
  const auto m = Mapping("m", {}, {"a.b", "c", "missing", "obj"});
  const Event e = LineEvent("t", R"({"a":{"b":2.25},"c":-7,"obj":{"x":1},"other":5})");
  EXPECT_EQ(Point(m, e), "m a.b=2.25,c=-7 1700000000123456789\n");
}

TEST(LineProtocolTest, ATagWithNoValueIsLeftOut) {
  const auto m = Mapping("m", {{"device", "{payload.device}"}, {"h", "{header.site}"}});
  EXPECT_EQ(Point(m, LineEvent("t", R"({"v":1})")), "m v=1 1700000000123456789\n");
}

TEST(LineProtocolTest, WhatTheProtocolCannotCarryFailsWithAReason) {
  std::string why;
  // No field at all.
  EXPECT_EQ(Point(Mapping("m"), LineEvent("t", R"({"o":{"x":1}})"), &why), "<failed>");
  EXPECT_NE(why.find("no field to write"), std::string::npos) << why;
  Event raw = LineEvent("t", "not json");
  raw.format = PayloadFormat::kRaw;
  EXPECT_EQ(Point(Mapping("m"), raw, &why), "<failed>");
  EXPECT_NE(why.find("not JSON"), std::string::npos) << why;
  // A measurement that cannot be filled.
  EXPECT_EQ(Point(Mapping("{payload.kind}"), LineEvent("t", R"({"v":1})"), &why), "<failed>");
  EXPECT_NE(why.find("measurement: the payload has no field payload.kind"), std::string::npos)
      << why;
  // A tag value ending in a backslash (influxd: "invalid tag format"), or with a line break.
  const auto tagged = Mapping("m", {{"d", "{payload.d}"}});
  EXPECT_EQ(Point(tagged, LineEvent("t", R"({"d":"a\\","v":1})"), &why), "<failed>");
  EXPECT_NE(why.find("ends in a backslash"), std::string::npos) << why;
  EXPECT_EQ(Point(tagged, LineEvent("t", R"({"d":"a\nb","v":1})"), &why), "<failed>");
  // A field key with a line break.
  EXPECT_EQ(Point(Mapping("m"), LineEvent("t", R"({"a\nb":1})"), &why), "<failed>");
  EXPECT_NE(why.find("field key"), std::string::npos) << why;
}

TEST(LineProtocolTest, BadMappingsAreRefusedAtConfigTime) {
  EXPECT_FALSE(MakePointMapping("{nope}", {}, {}, Precision::kSeconds).has_value());
  EXPECT_FALSE(MakePointMapping("m", {{"k\\", "v"}}, {}, Precision::kSeconds).has_value());
  EXPECT_FALSE(MakePointMapping("m", {{"k", "{payload.}"}}, {}, Precision::kSeconds).has_value());
  EXPECT_FALSE(MakePointMapping("m", {}, {"a..b"}, Precision::kSeconds).has_value());
}

}  // namespace
}  // namespace seedance::sinks
