// The exposition parser: both formats, timestamps, exemplars, # EOF, and its bounds.
#include "observe/prometheus_text.h"

#include <gtest/gtest.h>

#include <cmath>

namespace seedance::observe {
namespace {

TEST(PrometheusTextTest, ParsesLabelsEscapesAndSpecialValues) {
  auto s = ParsePrometheusText(
      "# HELP x y\n# TYPE a counter\na_total 3\n"
      "b{le=\"+Inf\",path=\"C:\\\\dir \\\"q\\\"\"} +Inf 1700000000\n\nc{} 1.5e3\n");
  ASSERT_TRUE(s.has_value()) << s.error().message();
  ASSERT_EQ(s->size(), 3u);
  EXPECT_EQ((*s)[0].name, "a_total");
  EXPECT_EQ((*s)[0].value, 3);
  EXPECT_FALSE((*s)[0].timestamp_ms.has_value());
  EXPECT_EQ((*s)[1].Label("le"), "+Inf");
  EXPECT_EQ((*s)[1].Label("path"), "C:\\dir \"q\"");
  EXPECT_TRUE(std::isinf((*s)[1].value));
  EXPECT_EQ((*s)[1].timestamp_ms, 1700000000);
  EXPECT_EQ((*s)[2].value, 1500);
}

TEST(PrometheusTextTest, MalformedLinesAreRefusedWithTheirNumberAndWhy) {
  auto s = ParsePrometheusText("ok 1\nbroken{le=\"1\" 2\n");
  ASSERT_FALSE(s.has_value());
  EXPECT_NE(s.error().message().find("line 2"), std::string::npos);
  for (const char* bad : {"x", "x{a=\"1\"}", "x 1 2 3", "x one", "x 1 1.5", "x{a=1} 1",
                          "x{a=\"\\q\"} 1", "x{1a=\"v\"} 1", "x +-1", "9x 1"}) {
    EXPECT_FALSE(ParsePrometheusText(bad).has_value()) << bad;
  }
}

TEST(PrometheusTextTest, OpenMetricsTakesSecondsExemplarsAndNeedsEof) {
  const char* page =
      "# TYPE req counter\n"
      "req_total{path=\"/\"} 7 1700000000.25 # {trace_id=\"ab\"} 1 1700000000\n"
      "temp 21.5\n"
      "# EOF\n";
  auto s = ParseExposition(page, ExpositionFormat::kOpenMetrics);
  ASSERT_TRUE(s.has_value()) << s.error().message();
  ASSERT_EQ(s->size(), 2u);
  EXPECT_EQ((*s)[0].timestamp_ms, 1700000000250);
  EXPECT_EQ((*s)[1].value, 21.5);
  auto cut = ParseExposition("temp 21.5\n", ExpositionFormat::kOpenMetrics);
  ASSERT_FALSE(cut.has_value());
  EXPECT_NE(cut.error().message().find("EOF"), std::string::npos);
  EXPECT_FALSE(ParseExposition("# EOF\ntemp 1\n", ExpositionFormat::kOpenMetrics).has_value());
  // The text format has no exemplars.
  EXPECT_FALSE(ParsePrometheusText("req_total 7 # {trace_id=\"ab\"} 1").has_value());
}

TEST(PrometheusTextTest, TheContentTypeNamesTheFormat) {
  EXPECT_EQ(FormatOfContentType("application/openmetrics-text; version=1.0.0; charset=utf-8"),
            ExpositionFormat::kOpenMetrics);
  EXPECT_EQ(FormatOfContentType(" Application/OpenMetrics-Text"), ExpositionFormat::kOpenMetrics);
  EXPECT_EQ(FormatOfContentType("text/plain; version=0.0.4"), ExpositionFormat::kText);
  EXPECT_EQ(FormatOfContentType(""), ExpositionFormat::kText);
}

TEST(PrometheusTextTest, APageBeyondItsLimitsIsRefused) {
  const ParseLimits limits{.max_samples = 2, .max_line_bytes = 40, .max_labels = 2};
  EXPECT_TRUE(ParseExposition("a 1\nb 2\n", ExpositionFormat::kText, limits).has_value());
  auto many = ParseExposition("a 1\nb 2\nc 3\n", ExpositionFormat::kText, limits);
  ASSERT_FALSE(many.has_value());
  EXPECT_NE(many.error().message().find("more than 2 samples"), std::string::npos);
  auto wide = ParseExposition("a{x=\"1\",y=\"2\",z=\"3\"} 1\n", ExpositionFormat::kText, limits);
  ASSERT_FALSE(wide.has_value());
  EXPECT_NE(wide.error().message().find("more than 2 labels"), std::string::npos);
  auto longer =
      ParseExposition("a{x=\"" + std::string(50, 'v') + "\"} 1\n", ExpositionFormat::kText, limits);
  ASSERT_FALSE(longer.has_value());
  EXPECT_NE(longer.error().message().find("longer than 40 bytes"), std::string::npos);
}

}  // namespace
}  // namespace seedance::observe
