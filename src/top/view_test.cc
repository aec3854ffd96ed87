#include "top/view.h"

#include <gtest/gtest.h>

namespace seedance::top {
namespace {

std::vector<observe::Sample> Parse(const std::string& text) {
  auto samples = observe::ParsePrometheusText(text);
  EXPECT_TRUE(samples.has_value());
  return samples.has_value() ? *samples : std::vector<observe::Sample>{};
}

// The words of a line (its cells, when none is empty).
std::vector<std::string> Words(const std::string& line) {
  std::vector<std::string> words;
  size_t i = 0;
  while (i < line.size()) {
    while (i < line.size() && line[i] == ' ') ++i;
    size_t start = i;
    while (i < line.size() && line[i] != ' ') ++i;
    if (i > start) words.push_back(line.substr(start, i - start));
  }
  return words;
}

using W = std::vector<std::string>;

constexpr const char* kBefore = R"(seedance_build_info{version="1.2.3"} 1
seedance_events_in_total{component="http",kind="sink"} 100
seedance_events_out_total{component="http",kind="sink"} 90
seedance_events_in_total{component="mqtt",kind="source"} 200
seedance_events_out_total{component="mqtt",kind="source"} 200
seedance_events_in_total{component="lua",kind="processor"} 200
seedance_events_out_total{component="lua",kind="processor"} 150
)";

constexpr const char* kNow = R"(seedance_build_info{version="1.2.3"} 1
seedance_events_in_total{component="http",kind="sink"} 300
seedance_events_out_total{component="http",kind="sink"} 290
seedance_errors_total{component="http",kind="sink"} 2
seedance_queue_depth{component="http",kind="sink"} 7
seedance_sink_in_flight{component="http"} 3
seedance_sink_concurrency_limit{component="http"} 8
seedance_sink_latency_p99_seconds{component="http"} 0.0125
seedance_events_in_total{component="mqtt",kind="source"} 600
seedance_events_out_total{component="mqtt",kind="source"} 600
seedance_mqtt_connected{component="mqtt",kind="source"} 1
seedance_events_in_total{component="lua",kind="processor"} 600
seedance_events_out_total{component="lua",kind="processor"} 350
seedance_events_dropped_total{component="lua",kind="processor",reason="filtered"} 240
seedance_events_dropped_total{component="lua",kind="processor",reason="stale"} 10
seedance_queue_disk_bytes 1048576
seedance_memory_budget_bytes 67108864
seedance_memory_bytes{tier="memory"} 16777216
seedance_memory_bytes{tier="disk"} 1048576
seedance_memory_trims_total{reason="occupancy"} 2
seedance_memory_trims_total{reason="idle_share"} 1
seedance_output_events_total{output="main"} 350
seedance_output_events_total{output="stale"} 10
)";

TEST(TopViewTest, ReadsEveryComponentsFiguresInPipelineOrder) {
  const Snapshot s = ReadSnapshot(Parse(kNow));
  ASSERT_EQ(s.components.size(), 3u);
  EXPECT_EQ(s.components[0].name, "mqtt");
  EXPECT_EQ(s.components[1].name, "lua");
  EXPECT_EQ(s.components[2].name, "http");
  const ComponentFigures& sink = s.components[2];
  EXPECT_EQ(sink.in, 300);
  EXPECT_EQ(sink.errors, 2);
  EXPECT_EQ(sink.queue_depth, 7);
  EXPECT_EQ(sink.in_flight, 3);
  EXPECT_EQ(sink.limit, 8);
  EXPECT_DOUBLE_EQ(*sink.p99_seconds, 0.0125);
  EXPECT_EQ(s.components[0].state, "up");
  EXPECT_EQ(s.components[1].dropped.at("filtered"), 240);
  EXPECT_EQ(s.trims, 3);
  EXPECT_EQ(s.memory_bytes, 16777216);
  EXPECT_EQ(s.version, "1.2.3");
  EXPECT_EQ(s.outputs.at("stale"), 10);
}

TEST(TopViewTest, RatesComeFromTheTwoScrapes) {
  const Snapshot before = ReadSnapshot(Parse(kBefore));
  const Snapshot now = ReadSnapshot(Parse(kNow));
  const std::vector<std::string> lines = RenderScreen(now, &before, 2.0, "title");
  ASSERT_EQ(lines.size(), 8u);
  EXPECT_EQ(lines[0], "title");
  EXPECT_EQ(lines[1], "queue on disk 1.0 MiB | memory 16.0 MiB of 64.0 MiB (25.0%), 3 trims");
  EXPECT_EQ(lines[2], "outputs: main 350 stale 10");
  // mqtt: (600 - 200) / 2 s in and out.
  EXPECT_EQ(Words(lines[4]), (W{"KIND", "NAME", "IN", "IN/S", "OUT", "OUT/S", "ERRORS", "QUEUE",
                                "FLIGHT", "LIMIT", "P99", "MS", "STATE", "/", "DROPPED"}));
  EXPECT_EQ(Words(lines[5]),
            (W{"source", "mqtt", "600", "200.0", "600", "200.0", "0", "-", "-", "-", "-", "up"}));
  EXPECT_EQ(Words(lines[6]), (W{"processor", "lua", "600", "200.0", "350", "100.0", "0", "-", "-",
                                "-", "-", "filtered=240", "stale=10"}));
  EXPECT_EQ(Words(lines[7]),
            (W{"sink", "http", "300", "100.0", "290", "100.0", "2", "7", "3", "8", "12.5"}));
}

TEST(TopViewTest, WithoutAnEarlierScrapeRatesAreUnknownAndLinesAreCut) {
  const Snapshot now = ReadSnapshot(Parse(kNow));
  const std::vector<std::string> lines = RenderScreen(now, nullptr, 0, "title", 40);
  for (const auto& line : lines) EXPECT_LE(line.size(), 40u);
  const std::vector<std::string> wide = RenderScreen(now, nullptr, 0, "title");
  EXPECT_EQ(Words(wide[5]),
            (W{"source", "mqtt", "600", "-", "600", "-", "0", "-", "-", "-", "-", "up"}));
}

TEST(TopViewTest, AComponentNewSinceTheLastScrapeHasNoRateYet) {
  const Snapshot before = ReadSnapshot(Parse("seedance_build_info{version=\"1\"} 1\n"));
  const Snapshot now = ReadSnapshot(Parse(kNow));
  const std::vector<std::string> lines = RenderScreen(now, &before, 1.0, "t");
  EXPECT_EQ(Words(lines[5])[3], "-") << lines[5];
}

}  // namespace
}  // namespace seedance::top
