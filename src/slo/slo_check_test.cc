#include "slo/slo_check.h"

#include <gtest/gtest.h>

#include <cmath>

namespace seedance::slo {
namespace {

TEST(HistogramQuantileTest, InterpolatesLikePrometheus) {
  // 100 observations: 50 in (0, 1], 40 in (1, 2], 10 in (2, +Inf).
  std::vector<std::pair<double, double>> b{{1, 50}, {2, 90}, {INFINITY, 100}};
  EXPECT_DOUBLE_EQ(HistogramQuantile(0.5, b), 1.0);
  EXPECT_DOUBLE_EQ(HistogramQuantile(0.25, b), 0.5);
  EXPECT_DOUBLE_EQ(HistogramQuantile(0.7, b), 1.5);
  EXPECT_DOUBLE_EQ(HistogramQuantile(0.95, b), 2.0);  // in +Inf: the highest finite bound
  EXPECT_TRUE(std::isnan(HistogramQuantile(0.5, {{1, 0}, {INFINITY, 0}})));
}

std::string Scrape(double le_1ms, double le_10ms, double inf, double out) {
  return "seedance_event_latency_seconds_bucket{component=\"a\",le=\"0.001\"} " +
         std::to_string(le_1ms) +
         "\nseedance_event_latency_seconds_bucket{component=\"a\",le=\"0.01\"} " +
         std::to_string(le_10ms) +
         "\nseedance_event_latency_seconds_bucket{component=\"a\",le=\"+Inf\"} " +
         std::to_string(inf) + "\nseedance_events_out_total{component=\"a\",kind=\"sink\"} " +
         std::to_string(out) +
         "\nseedance_events_out_total{component=\"lua\",kind=\"processor\"} 99999\n";
}

TEST(SloCheckTest, WindowIsTheDifferenceOfTwoScrapes) {
  // Before: 1000 fast events. In the window: 100 events, all between 1 and 10 ms.
  auto before = *ParsePrometheusText(Scrape(1000, 1000, 1000, 1000));
  auto after = *ParsePrometheusText(Scrape(1000, 1100, 1100, 1100));
  auto p50 = FigureFromScrapes(*ParseSloMetric("p50_latency_ms"), before, after, 10);
  ASSERT_TRUE(p50.has_value());
  EXPECT_NEAR(*p50, 5.5, 1e-9);  // halfway through (1, 10] ms
  // Since start, the same p50 is under 1 ms.
  auto all = FigureFromScrapes(*ParseSloMetric("p50_latency_ms"), {}, after, 0);
  EXPECT_LT(*all, 1.0);
  auto eps = FigureFromScrapes(*ParseSloMetric("throughput_eps"), before, after, 10);
  EXPECT_DOUBLE_EQ(*eps, 10);  // 100 sink deliveries in 10 s; processors not counted
  auto empty = FigureFromScrapes(*ParseSloMetric("p95_latency_ms"), after, after, 10);
  EXPECT_EQ(empty.error().code(), StatusCode::kNotFound);
}

TEST(SloCheckTest, MetricNamesAndDirections) {
  EXPECT_DOUBLE_EQ(ParseSloMetric("p95_latency_ms")->quantile, 0.95);
  EXPECT_DOUBLE_EQ(ParseSloMetric("p99.9_latency_ms")->quantile, 0.999);
  EXPECT_DOUBLE_EQ(ParseSloMetric("p999_latency_ms")->quantile, 0.999);
  EXPECT_FALSE(ParseSloMetric("p100_latency_ms").has_value());
  EXPECT_FALSE(ParseSloMetric("latency").has_value());
  auto lat = *ParseSloMetric("p95_latency_ms");
  EXPECT_TRUE(MeetsObjective(lat, 120, 120));
  EXPECT_FALSE(MeetsObjective(lat, 120.1, 120));
  auto eps = *ParseSloMetric("throughput_eps");
  EXPECT_TRUE(MeetsObjective(eps, 1000, 1000));
  EXPECT_FALSE(MeetsObjective(eps, 999, 1000));
  EXPECT_NE(PushgatewayBody(lat, 12, 120, 300).find("seedance_slo_ok{metric=\"p95_latency_ms\"} 1"),
            std::string::npos);
}

TEST(SloCheckTest, ReportWindowUsesTheLastTimelinePoints) {
  // One run, 4 points of 1 s; the last 2 s hold only slow events (bucket index 1 = ≤ 0.25 ms).
  const std::string report = R"({"latency_bucket_bounds_ms":[0.1,0.25],
    "runs":[{"throughput_eps":100,"latency_ms":{"p50":0.05,"p95":0.2,"p99":0.2},"timeline":[
      {"t_s":1,"events_out":100,"latency_buckets":[100,0,0]},
      {"t_s":2,"events_out":200,"latency_buckets":[100,0,0]},
      {"t_s":3,"events_out":300,"latency_buckets":[0,100,0]},
      {"t_s":4,"events_out":500,"latency_buckets":[0,100,0]}]}]})";
  std::string how;
  auto whole = FigureFromReport(*ParseSloMetric("p50_latency_ms"), report, 0, &how);
  EXPECT_DOUBLE_EQ(*whole, 0.05);  // exact figure of the whole run
  EXPECT_NE(how.find("whole run"), std::string::npos);
  auto last = FigureFromReport(*ParseSloMetric("p50_latency_ms"), report, 2, &how);
  EXPECT_NEAR(*last, 0.175, 1e-9);  // halfway through (0.1, 0.25]
  auto eps = FigureFromReport(*ParseSloMetric("throughput_eps"), report, 2, &how);
  EXPECT_DOUBLE_EQ(*eps, 150);  // (500 − 200) / (4 − 2)
}

}  // namespace
}  // namespace seedance::slo
