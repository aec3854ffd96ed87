#include "sinks/common/series_mapping.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

namespace seedance::sinks {
namespace {

Event SeriesEvent(std::string payload, std::string topic = "site/north/climate") {
  Event e;
  e.topic = std::move(topic);
  e.payload = std::move(payload);
  e.event_time_ns = 1700000000123456789;
  return e;
}

SeriesMapping Mapping(SeriesMappingConfig c = {}) {
  auto m = MakeSeriesMapping(c);
  EXPECT_TRUE(m.has_value()) << m.error().message();
  return std::move(*m);
}

std::vector<SeriesSample> Samples(const SeriesMapping& m, const Event& e, std::string* why) {
  std::vector<SeriesSample> out(1);  // something before: a failure leaves it alone
  if (!AppendSamples(m, e, out, why)) {
    EXPECT_EQ(out.size(), 1u) << "a failed event leaves nothing behind";
    return {};
  }
  out.erase(out.begin());
  return out;
}

TEST(SeriesMappingTest, AScrapedSampleKeepsItsNameLabelsAndValue) {
  // What the prometheus_scrape source emits: the defaults give the series Prometheus scrapes.
  const Event e =
      SeriesEvent(R"({"name":"node_load1","labels":{"cpu":"0","mode":"idle"},"value":0.25,)"
                  R"("instance":"127.0.0.1:9100","job":"node"})");
  std::string why;
  const auto s = Samples(Mapping(), e, &why);
  ASSERT_EQ(s.size(), 1u) << why;
  const Labels want = {{"__name__", "node_load1"},
                       {"cpu", "0"},
                       {"instance", "127.0.0.1:9100"},
                       {"job", "node"},
                       {"mode", "idle"}};
  EXPECT_EQ(s[0].labels, want);  // sorted by name
  EXPECT_EQ(s[0].value, 0.25);
  EXPECT_EQ(s[0].timestamp_ms, 1700000000123);  // the event time, in ms
}

TEST(SeriesMappingTest, ValuesJsonCannotHoldAndBooleansAreSamples) {
  const auto m = Mapping();
  std::string why;
  EXPECT_TRUE(
      std::isnan(Samples(m, SeriesEvent(R"({"name":"a","value":"NaN"})"), &why).at(0).value));
  EXPECT_EQ(Samples(m, SeriesEvent(R"({"name":"a","value":"+Inf"})"), &why).at(0).value, INFINITY);
  EXPECT_EQ(Samples(m, SeriesEvent(R"({"name":"a","value":"-Inf"})"), &why).at(0).value, -INFINITY);
  EXPECT_EQ(Samples(m, SeriesEvent(R"({"name":"a","value":true})"), &why).at(0).value, 1);
  EXPECT_TRUE(Samples(m, SeriesEvent(R"({"name":"a","value":"high"})"), &why).empty());
  EXPECT_NE(why.find("no value: payload field value"), std::string::npos) << why;
  EXPECT_TRUE(Samples(m, SeriesEvent(R"({"name":"a"})"), &why).empty());
}

TEST(SeriesMappingTest, FieldsMakeOneSeriesEachAndConfiguredLabelsWin) {
  SeriesMappingConfig c;
  c.metric = "{topic.3}";
  c.label_fields = {"device", "labels"};
  c.labels = {{"site", "{topic.2}"}, {"device", "{payload.id}"}};
  c.fields = {"avg", "stats.max", "missing"};
  const auto m = Mapping(c);
  std::string why;
  const auto s =
      Samples(m,
              SeriesEvent(R"({"device":"d1","id":"x9","labels":{"unit":"C","empty":""},"avg":21.5,)"
                          R"("stats":{"max":30}})"),
              &why);
  ASSERT_EQ(s.size(), 2u) << why;
  const Labels avg = {
      {"__name__", "climate_avg"}, {"device", "x9"}, {"site", "north"}, {"unit", "C"}};
  EXPECT_EQ(s[0].labels, avg);  // `labels` won; the empty label is left out
  EXPECT_EQ(s[0].value, 21.5);
  EXPECT_EQ(s[1].labels[0].second, "climate_stats_max");
  EXPECT_EQ(s[1].value, 30);
  // No metric for the event: the field alone names the series.
  const auto alone = Samples(m, SeriesEvent(R"({"avg":1})", "x"), &why);
  ASSERT_EQ(alone.size(), 1u) << why;
  EXPECT_EQ(alone[0].labels[0].second, "avg");
  EXPECT_TRUE(Samples(m, SeriesEvent(R"({"other":1})"), &why).empty());
  EXPECT_NE(why.find("no field `fields` names"), std::string::npos) << why;
}

TEST(SeriesMappingTest, AHugeLabelObjectIsReadOnceWithTheLastOfEachNameKept) {
  // 50,000 members (a label looked up per label was quadratic: ~10^9 steps here), one name
  // twice; `labels` wins over the payload.
  std::string payload = R"({"name":"m","value":1,"labels":{)";
  for (int i = 0; i < 50000; ++i) payload += "\"l" + std::to_string(i) + "\":\"a\",";
  payload += R"("l7":"second","site":"payload"}})";
  SeriesMappingConfig c;
  c.labels = {{"site", "config"}};
  std::string why;
  const auto s = Samples(Mapping(c), SeriesEvent(payload), &why);
  ASSERT_EQ(s.size(), 1u) << why;
  ASSERT_EQ(s[0].labels.size(), 50000u + 2);  // l0..l49999, site, __name__
  EXPECT_TRUE(std::is_sorted(s[0].labels.begin(), s[0].labels.end()));
  auto find = [&](std::string_view n) {
    for (const auto& [k, v] : s[0].labels) {
      if (k == n) return v;
    }
    return std::string("<none>");
  };
  EXPECT_EQ(find("l7"), "second");
  EXPECT_EQ(find("site"), "config");
  EXPECT_EQ(find("__name__"), "m");
}

TEST(SeriesMappingTest, OpenTelemetryNamesTakeAnyTextButNotTheSeriesNamesLabel) {
  SeriesMappingConfig c;
  c.names = MetricNames::kOpenTelemetry;
  c.fields = {"a.b"};
  std::string why;
  const auto s =
      Samples(Mapping(c), SeriesEvent(R"({"name":"x-y","labels":{"k.1":"v"},"a":{"b":2}})"), &why);
  ASSERT_EQ(s.size(), 1u) << why;
  EXPECT_EQ(s[0].labels, (Labels{{"__name__", "x-y.a.b"}, {"k.1", "v"}}));
  EXPECT_TRUE(Samples(Mapping(c),
                      SeriesEvent(R"({"name":"x","labels":{"__name__":"y"},"a":{"b":2}})"), &why)
                  .empty());
  EXPECT_NE(why.find("__name__"), std::string::npos) << why;
}

TEST(SeriesMappingTest, NamesOutsidePrometheusDataModelRejectTheEvent) {
  const auto m = Mapping();
  std::string why;
  EXPECT_TRUE(Samples(m, SeriesEvent(R"({"name":"cpu-temp","value":1})"), &why).empty());
  EXPECT_NE(why.find("metric name \"cpu-temp\" is not valid"), std::string::npos) << why;
  EXPECT_TRUE(
      Samples(m, SeriesEvent(R"({"name":"a","labels":{"a b":"1"},"value":1})"), &why).empty());
  EXPECT_NE(why.find("label name \"a b\""), std::string::npos) << why;
  EXPECT_TRUE(
      Samples(m, SeriesEvent(R"({"name":"a","labels":{"__name__":"b"},"value":1})"), &why).empty());
  EXPECT_TRUE(Samples(m, SeriesEvent(R"({"name":"9a","value":1})"), &why).empty());
  EXPECT_TRUE(IsValidMetricName("a:b_c9"));
  EXPECT_TRUE(IsValidLabelName("_a9"));
  EXPECT_FALSE(IsValidLabelName("a:b"));
}

TEST(SeriesMappingTest, BadConfigSaysWhat) {
  SeriesMappingConfig c;
  c.labels = {{"__x", "1"}};
  auto m = MakeSeriesMapping(c);
  ASSERT_FALSE(m.has_value());
  EXPECT_NE(m.error().message().find("\"__x\" is not a label name"), std::string::npos);
  c = {};
  c.metric = "{nope}";
  EXPECT_FALSE(MakeSeriesMapping(c).has_value());
}

}  // namespace
}  // namespace seedance::sinks
