#include "observe/tap_hub.h"

#include <gtest/gtest.h>

#include <thread>

namespace seedance::observe {
namespace {

Event MakeEvent(std::string topic, std::string payload) {
  Event e;
  e.topic = std::move(topic);
  e.payload = std::move(payload);
  return e;
}

// The test's encoding: the payload as it is.
void EncodePayload(const Event& e, std::string& out) { out += e.payload; }

std::vector<std::string> Lines(const std::string& text) {
  std::vector<std::string> lines;
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    lines.push_back(text.substr(start, end - start));
    start = end + 1;
  }
  return lines;
}

TEST(TapHubTest, InactiveUntilATapOpensAndAfterItCloses) {
  MetricsRegistry metrics;
  TapHub hub(metrics, EncodePayload);
  EXPECT_FALSE(hub.active());
  auto tap = hub.Open({});
  ASSERT_TRUE(tap.has_value());
  EXPECT_TRUE(hub.active());
  hub.Close(*tap);
  EXPECT_FALSE(hub.active());
  EXPECT_NE(metrics.RenderPrometheus().find("seedance_taps_open 0\n"), std::string::npos);
}

TEST(TapHubTest, LinesNameThePointAndCarryTheEncodedEvent) {
  MetricsRegistry metrics;
  TapHub hub(metrics, EncodePayload);
  auto tap = hub.Open({});
  ASSERT_TRUE(tap.has_value());
  hub.Offer(TapPoint::kProcessor, "lua", MakeEvent("t", "{\"v\":1}"));
  hub.Offer(TapPoint::kOutput, "stale", MakeEvent("t", "{\"v\":2}"));
  std::string out;
  EXPECT_FALSE((*tap)->Take(out, 1 << 20));
  EXPECT_EQ(Lines(out),
            (std::vector<std::string>{R"({"point":"processor","component":"lua","event":{"v":1}})",
                                      R"({"point":"output","output":"stale","event":{"v":2}})"}));
}

TEST(TapHubTest, ComponentsOutputsAndTopicSelectWhatATapSees) {
  MetricsRegistry metrics;
  TapHub hub(metrics, EncodePayload);
  auto by_component = hub.Open({.components = {"lua"}});
  auto by_output = hub.Open({.outputs = {"stale"}});
  auto by_topic = hub.Open({.topic = "plant/+/temp"});
  ASSERT_TRUE(by_component.has_value() && by_output.has_value() && by_topic.has_value());
  hub.Offer(TapPoint::kSource, "mqtt", MakeEvent("plant/a/temp", "1"));
  hub.Offer(TapPoint::kProcessor, "lua", MakeEvent("plant/a/hum", "2"));
  hub.Offer(TapPoint::kOutput, "stale", MakeEvent("plant/b/temp", "3"));
  hub.Offer(TapPoint::kOutput, "error", MakeEvent("x", "4"));
  auto payloads = [](const std::shared_ptr<Tap>& tap) {
    std::string out;
    tap->Take(out, 1 << 20);
    std::string seen;
    for (const std::string& line : Lines(out)) seen += line.substr(line.size() - 2, 1);
    return seen;
  };
  EXPECT_EQ(payloads(*by_component), "2");
  EXPECT_EQ(payloads(*by_output), "3");
  EXPECT_EQ(payloads(*by_topic), "13");
}

TEST(TapHubTest, ABadTopicFilterOrSampleIsRefused) {
  MetricsRegistry metrics;
  TapHub hub(metrics, EncodePayload);
  EXPECT_EQ(hub.Open({.topic = "a/#/b"}).error().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(hub.Open({.sample = 0}).error().code(), StatusCode::kInvalidArgument);
  EXPECT_FALSE(hub.active());
}

TEST(TapHubTest, SampleKeepsEveryNthAndLimitEndsTheTap) {
  MetricsRegistry metrics;
  TapHub hub(metrics, EncodePayload);
  auto tap = hub.Open({.sample = 3, .limit = 2});
  ASSERT_TRUE(tap.has_value());
  for (int i = 0; i < 10; ++i) hub.Offer(TapPoint::kSink, "s", MakeEvent("t", std::to_string(i)));
  std::string out;
  EXPECT_TRUE((*tap)->Take(out, 1 << 20));  // limit reached and drained: ended
  EXPECT_EQ(Lines(out),
            (std::vector<std::string>{R"({"point":"sink","component":"s","event":0})",
                                      R"({"point":"sink","component":"s","event":3})"}));
}

TEST(TapHubTest, AFullRingDropsForThatTapOnlyAndSaysSo) {
  MetricsRegistry metrics;
  const std::string line = R"({"point":"sink","component":"s","event":0})";
  TapHub hub(metrics, EncodePayload, kMaxTaps, /*ring_bytes=*/3 * (line.size() + 1));
  auto slow = hub.Open({});
  auto fast = hub.Open({});
  ASSERT_TRUE(slow.has_value() && fast.has_value());
  for (int i = 0; i < 10; ++i) {
    hub.Offer(TapPoint::kSink, "s", MakeEvent("t", "0"));
    std::string fast_out;
    (*fast)->Take(fast_out, 1 << 20);
    EXPECT_EQ(Lines(fast_out).size(), 1u) << fast_out;
  }
  std::string out;
  (*slow)->Take(out, 1 << 20);
  EXPECT_EQ(Lines(out),
            (std::vector<std::string>{line, line, line, R"({"dropped":7,"dropped_total":7})"}));
  EXPECT_EQ((*slow)->dropped(), 7u);
  EXPECT_EQ((*fast)->dropped(), 0u);
  const std::string text = metrics.RenderPrometheus();
  EXPECT_NE(text.find("seedance_tap_dropped_total{slot=\"0\"} 7\n"), std::string::npos) << text;
  EXPECT_NE(text.find("seedance_tap_dropped_total{slot=\"1\"} 0\n"), std::string::npos) << text;
  EXPECT_NE(text.find("seedance_tap_events_total{slot=\"1\"} 10\n"), std::string::npos) << text;
  // Drained, the ring takes events again and no further drop line comes.
  hub.Offer(TapPoint::kSink, "s", MakeEvent("t", "0"));
  out.clear();
  (*slow)->Take(out, 1 << 20);
  EXPECT_EQ(Lines(out), std::vector<std::string>{line});
}

TEST(TapHubTest, TheNumberOfTapsIsBoundedAndASlotIsReused) {
  MetricsRegistry metrics;
  TapHub hub(metrics, EncodePayload, /*max_taps=*/2);
  auto a = hub.Open({});
  auto b = hub.Open({});
  ASSERT_TRUE(a.has_value() && b.has_value());
  auto c = hub.Open({});
  ASSERT_FALSE(c.has_value());
  EXPECT_EQ(c.error().code(), StatusCode::kResourceExhausted);
  EXPECT_NE(metrics.RenderPrometheus().find("seedance_taps_refused_total 1\n"), std::string::npos);
  hub.Close(*a);
  auto d = hub.Open({});
  ASSERT_TRUE(d.has_value());
  EXPECT_EQ((*d)->slot(), 0u);
}

TEST(TapHubTest, TakeStopsNearMaxBytesButAlwaysGivesOneLine) {
  MetricsRegistry metrics;
  TapHub hub(metrics, EncodePayload);
  auto tap = hub.Open({});
  ASSERT_TRUE(tap.has_value());
  for (int i = 0; i < 5; ++i) hub.Offer(TapPoint::kSink, "s", MakeEvent("t", "0"));
  std::string out;
  (*tap)->Take(out, 1);
  EXPECT_EQ(Lines(out).size(), 1u);
  out.clear();
  (*tap)->Take(out, 1 << 20);
  EXPECT_EQ(Lines(out).size(), 4u);
}

TEST(TapHubTest, EndAllEndsEveryTapOnceDrained) {
  MetricsRegistry metrics;
  TapHub hub(metrics, EncodePayload);
  auto tap = hub.Open({});
  ASSERT_TRUE(tap.has_value());
  hub.Offer(TapPoint::kSink, "s", MakeEvent("t", "0"));
  hub.EndAll();
  hub.Offer(TapPoint::kSink, "s", MakeEvent("t", "1"));  // after the end: not taken
  std::string out;
  EXPECT_TRUE((*tap)->Take(out, 1 << 20));
  EXPECT_EQ(Lines(out).size(), 1u);
}

TEST(TapHubTest, PointsOnTwoThreadsAndATakerLoseNothingThatFits) {
  MetricsRegistry metrics;
  TapHub hub(metrics, EncodePayload);
  auto tap = hub.Open({});
  ASSERT_TRUE(tap.has_value());
  constexpr int kEach = 2000;
  auto offer = [&](TapPoint point) {
    for (int i = 0; i < kEach; ++i) hub.Offer(point, "c", MakeEvent("t", "1"));
  };
  std::thread a(offer, TapPoint::kSource);
  std::thread b(offer, TapPoint::kSink);
  size_t lines = 0;
  for (int round = 0; round < 10000 && lines < 2 * kEach; ++round) {
    std::string out;
    (*tap)->Take(out, 1 << 16);
    lines += Lines(out).size();
    if (out.empty()) std::this_thread::yield();
  }
  a.join();
  b.join();
  std::string rest;
  (*tap)->Take(rest, 1 << 30);
  lines += Lines(rest).size();
  EXPECT_EQ(lines, 2u * kEach);
  EXPECT_EQ((*tap)->dropped(), 0u);
}

}  // namespace
}  // namespace seedance::observe
