#include "observe/metrics.h"

#include <gtest/gtest.h>

namespace seedance::observe {
namespace {

TEST(MetricsTest, RendersCountersGaugesAndHistogramsInPrometheusFormat) {
  MetricsRegistry r;
  r.GetCounter("x_total", "Things.", {{"component", "a\"b"}}).Add(3);
  r.GetCounter("x_total", "Things.", {{"component", "a\"b"}}).Add(2);
  r.GetGauge("depth", "Depth.", {}).Set(-4);
  r.GetFloatGauge("p99_seconds", "P99.", {}).Set(0.0125);
  auto& h = r.GetHistogram("lat_seconds", "Latency.", {{"component", "s"}});
  h.Observe(0.0002);
  h.Observe(0.003);
  h.Observe(50);
  std::string text = r.RenderPrometheus();
  EXPECT_NE(text.find("# TYPE x_total counter\nx_total{component=\"a\\\"b\"} 5\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("depth -4\n"), std::string::npos);
  EXPECT_NE(text.find("# TYPE p99_seconds gauge\np99_seconds 0.0125\n"), std::string::npos) << text;
  EXPECT_NE(text.find("lat_seconds_bucket{component=\"s\",le=\"0.00025\"} 1\n"), std::string::npos)
      << text;
  EXPECT_NE(text.find("lat_seconds_bucket{component=\"s\",le=\"0.005\"} 2\n"), std::string::npos);
  EXPECT_NE(text.find("lat_seconds_bucket{component=\"s\",le=\"+Inf\"} 3\n"), std::string::npos);
  EXPECT_NE(text.find("lat_seconds_count{component=\"s\"} 3\n"), std::string::npos);
}

}  // namespace
}  // namespace seedance::observe
