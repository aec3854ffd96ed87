#include <gtest/gtest.h>

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "eventtime/key_selector.h"

#include "processors/watermark/watermark_processor.h"
#include "processors/window/window_processor.h"
#include "testing/plugin_harness.h"

namespace seedance::processors {
namespace {

using seedance::testing::Harness;
using seedance::testing::JsonEvent;
using seedance::testing::ProcessorParams;
using seedance::testing::RecordingOutput;

constexpr int64_t kS = 1'000'000'000;

// An event of payload `json` at event time `t`.
Event JsonAt(const std::string& json, int64_t t) {
  Event e = JsonEvent(json);
  e.event_time_ns = t;
  return e;
}
// An event of key field "d" = `key` at event time `t`.
Event KeyAt(const std::string& key, int64_t t) { return JsonAt(R"({"d":")" + key + R"("})", t); }

class EventTimeProcessorsTest : public ::testing::Test {
 protected:
  std::unique_ptr<Processor> Make(const std::string& type, const std::string& yaml) {
    auto ctx = harness_.Context(type);
    ctx.now_ns = [this] { return now_; };
    auto factory = type == "window" ? WindowProcessorFactory() : WatermarkProcessorFactory();
    auto p = factory.create(ProcessorParams(type, yaml), ctx);
    EXPECT_TRUE(p.has_value()) << (p ? "" : p.error().message());
    return p ? std::move(p).value() : nullptr;
  }
  Result<std::unique_ptr<Processor>> TryMake(const std::string& type, const std::string& yaml) {
    auto ctx = harness_.Context(type);
    auto factory = type == "window" ? WindowProcessorFactory() : WatermarkProcessorFactory();
    return factory.create(ProcessorParams(type, yaml), ctx);
  }
  Harness harness_;
  int64_t now_ = 1'800'000'000 * kS;
};

TEST_F(EventTimeProcessorsTest, WatermarkTakesTheFieldOrRoutesBadTimesToErrorWhenRequired) {
  auto strict = Make("watermark", "time_field: ts\nrequire_time: true\n");
  RecordingOutput out;
  strict->Process(JsonEvent(R"({"ts":"2026-11-29T23:00:00Z"})"), out);
  strict->Process(JsonEvent(R"({"ts":"yesterday"})"), out);
  strict->Process(JsonEvent(R"({"v":1})"), out);
  ASSERT_EQ(out.main.size(), 1u);
  EXPECT_EQ(out.main[0].event_time_ns, 1795993200 * kS);
  ASSERT_EQ(out.side.size(), 2u);
  EXPECT_EQ(out.side[0].output, Output::kError);
  EXPECT_NE(out.side[0].reason.find("not an RFC 3339 time"), std::string::npos);
  EXPECT_NE(out.side[1].reason.find("time field \"ts\": missing"), std::string::npos);

  auto lenient = Make("watermark", "time_field: ts\n");
  RecordingOutput out2;
  Event e = JsonEvent(R"({"v":1})");
  e.ingest_time_ns = 42 * kS;
  lenient->Process(std::move(e), out2);
  ASSERT_EQ(out2.main.size(), 1u);
  EXPECT_EQ(out2.main[0].event_time_ns, 42 * kS);  // the ingest time
}

TEST_F(EventTimeProcessorsTest, StaleEventsCarryReasonAndLatenessAndWatermarksFlowOn) {
  auto wm = Make("watermark",
                 "time_field: ts\ntime_format: s\nmax_out_of_order: 0s\n"
                 "allowed_lateness: 10s\n");
  RecordingOutput out;
  wm->Process(JsonEvent(R"({"ts":1000})"), out);
  wm->Process(JsonEvent(R"({"ts":985})"), out);
  ASSERT_EQ(out.side.size(), 1u);
  EXPECT_EQ(out.side[0].output, Output::kStale);
  EXPECT_NE(out.side[0].reason.find("15 s behind the watermark"), std::string::npos)
      << out.side[0].reason;
  EXPECT_EQ(*out.side[0].event.FindHeader("lateness_ms"), "15000");
  ASSERT_EQ(out.watermarks.size(), 1u);
  EXPECT_EQ(out.watermarks[0], std::make_pair(std::string(), 1000 * kS));
}

TEST_F(EventTimeProcessorsTest, WindowEmitsOnWatermarkAndReEmitsLateUpdates) {
  auto win = Make("window",
                  "size: 10s\nkey_field: d\nfield: v\naggregates: [count, sum, p50]\n"
                  "allowed_lateness: 20s\n");
  RecordingOutput out;
  win->Process(JsonAt(R"({"d":"a","v":1})", 1001 * kS), out);
  win->Process(JsonAt(R"({"d":"a","v":3})", 1005 * kS), out);
  EXPECT_TRUE(out.main.empty());
  win->OnWatermark("", 1010 * kS, out);
  ASSERT_EQ(out.main.size(), 1u);
  EXPECT_NE(out.main[0].payload.find(R"("count":2,"sum":4)"), std::string::npos)
      << out.main[0].payload;
  EXPECT_NE(out.main[0].payload.find(R"("update":0)"), std::string::npos);
  EXPECT_EQ(out.main[0].topic, "window/a");
  win->Process(JsonAt(R"({"d":"a","v":5})", 1002 * kS), out);  // late, within lateness
  ASSERT_EQ(out.main.size(), 2u);
  EXPECT_NE(out.main[1].payload.find(R"("count":3,"sum":9)"), std::string::npos);
  EXPECT_NE(out.main[1].payload.find(R"("update":1)"), std::string::npos);
  win->OnWatermark("", 1030 * kS, out);                        // closes [1000, 1010)
  win->Process(JsonAt(R"({"d":"a","v":7})", 1003 * kS), out);  // too late now
  ASSERT_EQ(out.side.size(), 1u);
  EXPECT_EQ(out.side[0].output, Output::kStale);
  win->Process(JsonAt(R"({"v":7})", 1031 * kS), out);  // no key
  ASSERT_EQ(out.side.size(), 2u);
  EXPECT_EQ(out.side[1].output, Output::kError);
}

TEST_F(EventTimeProcessorsTest, IdleKeysAreFlushedAfterTheirTtl) {
  auto win = Make("window", "size: 10s\nkey_field: d\nstate_ttl: 1m\n");
  RecordingOutput out;
  Event e = JsonEvent(R"({"d":"quiet"})");
  e.event_time_ns = 1001 * kS;
  win->Process(std::move(e), out);
  win->Tick(now_ + 59 * kS, out);
  EXPECT_TRUE(out.main.empty());
  win->Tick(now_ + 61 * kS, out);  // silent for over a minute: its window fires, key gone
  ASSERT_EQ(out.main.size(), 1u);
  EXPECT_NE(out.main[0].payload.find(R"("count":1)"), std::string::npos);
  std::vector<std::pair<std::string, std::string>> changed;
  win->TakeChangedState([&](std::string_view k, std::string_view v) {
    if (k != "stream") changed.emplace_back(k, v);
  });
  ASSERT_EQ(changed.size(), 1u);
  EXPECT_EQ(changed[0].first.substr(0, 8), std::string("w:quiet\0", 8)) << "its one window";
  EXPECT_TRUE(changed[0].second.empty());  // deleted from the checkpoint
}

TEST_F(EventTimeProcessorsTest, BadWindowParametersAreRefusedWithTheReason) {
  auto bad_slide = TryMake("window", "size: 10s\nslide: 3s\n");
  ASSERT_FALSE(bad_slide.has_value());
  EXPECT_NE(bad_slide.error().message().find("slide must divide size"), std::string::npos);
  auto bad_agg = TryMake("window", "size: 10s\nfield: v\naggregates: [median]\n");
  ASSERT_FALSE(bad_agg.has_value());
  EXPECT_NE(bad_agg.error().message().find("aggregate \"median\""), std::string::npos);
  auto no_key = TryMake("watermark", "per: key\n");
  ASSERT_FALSE(no_key.has_value());
  // Reconfigure: a key change is refused, a lateness change accepted.
  auto win = Make("window", "size: 10s\nkey_field: d\n");
  EXPECT_FALSE(
      win->Reconfigure(ProcessorParams("window", "size: 10s\nkey_field: e\n"), false).ok());
  EXPECT_TRUE(
      win->Reconfigure(ProcessorParams("window", "size: 10s\nkey_field: d\nallowed_lateness: 1m\n"),
                       true)
          .ok());
}

// A stream of new keys (one per event, from a broken or hostile publisher) grew the window
// state, and the per-key watermarks, until the memory ran out: past max_keys a new key's
// event goes to `error` with the reason; the open keys go on.
TEST_F(EventTimeProcessorsTest, WindowRefusesNewKeysPastMaxKeysAndTheOpenOnesGoOn) {
  auto win = Make("window", "size: 10s\nkey_field: d\nmax_keys: 3\nstate_ttl: 1m\n");
  RecordingOutput out;
  for (int i = 0; i < 100; ++i) win->Process(KeyAt("k" + std::to_string(i), 1001 * kS), out);
  ASSERT_EQ(out.side.size(), 97u);
  EXPECT_EQ(out.side[0].output, Output::kError);
  EXPECT_NE(out.side[0].reason.find("max_keys (3) reached"), std::string::npos)
      << out.side[0].reason;
  EXPECT_NE(out.side[0].reason.find("(key \"k3\")"), std::string::npos) << out.side[0].reason;
  win->Process(KeyAt("k1", 1002 * kS), out);  // an open key is still counted
  EXPECT_EQ(out.side.size(), 97u);
  EXPECT_EQ(harness_.metrics
                .GetCounter("seedance_window_keys_refused_total", "", {{"component", "window"}})
                .Value(),
            97u);
  win->OnWatermark("", 1010 * kS, out);
  ASSERT_EQ(out.main.size(), 3u);
  EXPECT_NE(out.main[1].payload.find(R"("key":"k1","window_start")"), std::string::npos);
  EXPECT_NE(out.main[1].payload.find(R"("count":2)"), std::string::npos) << out.main[1].payload;
  // A reload raises the limit: a new key is taken at once.
  ASSERT_TRUE(win->Reconfigure(ProcessorParams("window",
                                               "size: 10s\nkey_field: d\nmax_keys: 4\n"
                                               "state_ttl: 1m\n"),
                               true)
                  .ok());
  win->Process(KeyAt("fourth", 1011 * kS), out);
  win->Process(KeyAt("fifth", 1011 * kS), out);
  EXPECT_EQ(out.side.size(), 98u);
  // Once the keys are forgotten (state_ttl), new ones are taken again.
  win->Tick(now_ + 61 * kS, out);
  win->Process(KeyAt("new", 1012 * kS), out);
  EXPECT_EQ(out.side.size(), 98u);
}

// max_keys did not bound the state: a key holds a window for every slide its events' times
// reach between the watermark less allowed_lateness and the newest time. 1 s windows with 5 min
// of lateness: one key's events scattered over those 5 minutes held 300 windows (30 million at
// max_keys). Past max_windows, an event that would open one goes to `error`; the open windows
// still take events, and once closed windows are purged new ones are opened again.
TEST_F(EventTimeProcessorsTest, WindowRefusesEventsThatWouldOpenWindowsPastMaxWindows) {
  auto win = Make("window", "size: 1s\nallowed_lateness: 5m\nkey_field: d\nmax_windows: 50\n");
  RecordingOutput out;
  win->OnWatermark("", 2000 * kS, out);
  for (int i = 0; i < 300; ++i) win->Process(KeyAt("a", (1700 + i) * kS), out);
  EXPECT_EQ(out.main.size(), 50u);  // late, within lateness: each window emitted at once
  ASSERT_EQ(out.side.size(), 250u);
  EXPECT_EQ(out.side[0].output, Output::kError);
  EXPECT_EQ(out.side[0].reason,
            "max_windows (50) reached: the event would open 1 more window(s) (key \"a\", event "
            "time 1970-01-01T00:29:10.000Z); the open windows go on");
  EXPECT_EQ(harness_.metrics
                .GetCounter("seedance_window_windows_refused_total", "", {{"component", "window"}})
                .Value(),
            250u);
  EXPECT_EQ(
      harness_.metrics.GetGauge("seedance_window_open", "", {{"component", "window"}}).Value(), 50);
  win->Process(KeyAt("a", 1700 * kS), out);  // an open window still takes its events
  win->Process(KeyAt("b", 1701 * kS), out);  // another key's, too
  EXPECT_EQ(out.main.size(), 51u);
  EXPECT_NE(out.main.back().payload.find(R"("count":2)"), std::string::npos);
  EXPECT_EQ(out.side.size(), 251u);
  // Closed windows are purged (end + lateness passed): room for new ones.
  win->OnWatermark("", 2010 * kS, out);
  win->Process(KeyAt("a", 1900 * kS), out);
  EXPECT_EQ(out.side.size(), 251u);
}

// A sliding event opens size / slide windows at once: all or none.
TEST_F(EventTimeProcessorsTest, MaxWindowsRefusesASlidingEventWholeNotInPart) {
  auto win = Make("window", "size: 10s\nslide: 1s\nmax_windows: 15\n");
  RecordingOutput out;
  auto at = [](int64_t t) { return JsonAt(R"({"v":1})", t); };
  win->Process(at(1000 * kS), out);  // windows starting 991..1000: 10
  win->Process(at(1005 * kS), out);  // 996..1005: 5 more, 15
  win->Process(at(1006 * kS), out);  // would open 1006: refused, nothing counted
  ASSERT_EQ(out.side.size(), 1u);
  EXPECT_NE(out.side[0].reason.find("would open 1 more window(s)"), std::string::npos)
      << out.side[0].reason;
  win->OnWatermark("", 2000 * kS, out);
  ASSERT_EQ(out.main.size(), 15u);
  int twice = 0;  // windows 996..1000 hold 1000 and 1005; none holds 1006
  for (const Event& e : out.main) {
    if (e.payload.find(R"("count":2)") != std::string::npos) ++twice;
    EXPECT_EQ(e.payload.find(R"("count":3)"), std::string::npos) << e.payload;
  }
  EXPECT_EQ(twice, 5);
}

// A key is held by every window of it and written into the checkpoint and each result's
// topic: one of a megabyte from a payload is refused, with its size.
TEST_F(EventTimeProcessorsTest, AKeyLongerThanTheLimitGoesToErrorWithItsSize) {
  auto win = Make("window", "size: 10s\nkey_field: d\n");
  auto wm = Make("watermark", "per: key\nkey_field: d\n");
  RecordingOutput out;
  const std::string huge(1 << 20, 'x');
  win->Process(JsonEvent(R"({"d":")" + huge + R"("})"), out);
  wm->Process(JsonEvent(R"({"d":")" + huge + R"("})"), out);
  const std::string longest(eventtime::KeySelector::kMaxKeyBytes, 'y');
  win->Process(JsonEvent(R"({"d":")" + longest + R"("})"), out);
  wm->Process(JsonEvent(R"({"d":")" + longest + R"("})"), out);
  ASSERT_EQ(out.side.size(), 2u);
  for (const auto& side : out.side) {
    EXPECT_EQ(side.output, Output::kError);
    EXPECT_EQ(side.reason, "key of 1048576 bytes (payload field \"d\") is longer than 256 bytes");
  }
  EXPECT_EQ(out.main.size(), 1u);  // the watermark passed the 256-byte one on
}

// Per-key watermarks: past max_keys a new key is refused; a key silent for state_ttl is
// forgotten, and deleted from the checkpoint (before, every key was held for ever).
TEST_F(EventTimeProcessorsTest, PerKeyWatermarksAreBoundedAndForgottenAfterTheirTtl) {
  auto wm = Make("watermark",
                 "per: key\nkey_field: d\ntime_field: ts\ntime_format: s\nmax_keys: 2\n"
                 "state_ttl: 1m\n");
  RecordingOutput out;
  wm->Process(JsonEvent(R"({"d":"a","ts":1800000000})"), out);
  wm->Process(JsonEvent(R"({"d":"b","ts":1800000000})"), out);
  wm->Process(JsonEvent(R"({"d":"c","ts":1800000000})"), out);
  ASSERT_EQ(out.side.size(), 1u);
  EXPECT_NE(out.side[0].reason.find("max_keys (2) reached"), std::string::npos)
      << out.side[0].reason;
  wm->TakeChangedState([](std::string_view, std::string_view) {});
  wm->Tick(now_ + 30 * kS, out);
  now_ += 30 * kS;
  wm->Process(JsonEvent(R"({"d":"a","ts":1800000030})"), out);  // a stays; b goes at +60 s
  wm->Tick(now_ + 31 * kS, out);
  std::map<std::string, std::string> changed;
  wm->TakeChangedState(
      [&](std::string_view k, std::string_view v) { changed[std::string(k)] = std::string(v); });
  ASSERT_EQ(changed.count("s:b"), 1u);
  EXPECT_TRUE(changed["s:b"].empty());  // deleted from the checkpoint
  EXPECT_EQ(changed.count("s:a"), 1u);  // changed by its event, still there
  EXPECT_FALSE(changed["s:a"].empty());
  wm->Process(JsonEvent(R"({"d":"c","ts":1800000000})"), out);  // room again
  EXPECT_EQ(out.side.size(), 1u);
  EXPECT_EQ(out.main.size(), 4u);
}

// One event stamped in 2100 moved the watermark there: every later event was stale, every
// window closed, and the watermark was checkpointed so, across restarts. Past max_future
// (10 min) the event goes to `error` and moves nothing.
TEST_F(EventTimeProcessorsTest, AnEventFarAheadOfTheClockIsRefusedAndMovesNoWatermark) {
  auto wm = Make("watermark", "time_field: ts\ntime_format: s\nmax_out_of_order: 0s\n");
  RecordingOutput out;
  const int64_t now_s = now_ / kS;
  auto at = [](int64_t s) { return JsonEvent(R"({"ts":)" + std::to_string(s) + "}"); };
  wm->Process(at(now_s), out);
  wm->Process(at(4102444800), out);   // 2100-01-01
  wm->Process(at(now_s + 601), out);  // just past max_future
  wm->Process(at(now_s + 599), out);  // a clock a little ahead: taken
  wm->Process(at(now_s + 400), out);  // within allowed_lateness of it: not stale
  ASSERT_EQ(out.side.size(), 2u);
  EXPECT_EQ(out.side[0].output, Output::kError);
  EXPECT_NE(out.side[0].reason.find("event time 2100-01-01T00:00:00.000Z is "), std::string::npos)
      << out.side[0].reason;
  EXPECT_NE(out.side[0].reason.find("ahead of the clock (max_future 600 s)"), std::string::npos)
      << out.side[0].reason;
  EXPECT_EQ(out.main.size(), 3u);
  ASSERT_FALSE(out.watermarks.empty());
  EXPECT_EQ(out.watermarks.back().second, (now_s + 599) * kS);
  EXPECT_EQ(harness_.metrics
                .GetCounter("seedance_event_time_future_total", "", {{"component", "watermark"}})
                .Value(),
            2u);
  auto off = Make("watermark", "time_field: ts\ntime_format: s\nmax_future: 0s\n");
  RecordingOutput out2;
  off->Process(at(4102444800), out2);
  EXPECT_EQ(out2.main.size(), 1u);  // 0: off
}

// An event time near the ends of int64 ns (max_future off, or no watermark in front) made
// the window's end and end + lateness overflow (undefined behaviour): now refused with why.
TEST_F(EventTimeProcessorsTest, AnEventTimeWhoseWindowsCannotBeHeldGoesToError) {
  auto win = Make("window", "size: 1h\nallowed_lateness: 5m\n");
  RecordingOutput out;
  for (int64_t t : {INT64_MAX - 1, INT64_MIN + 1}) {
    Event e = JsonEvent("{}");
    e.event_time_ns = t;
    win->Process(std::move(e), out);
  }
  ASSERT_EQ(out.side.size(), 2u);
  EXPECT_EQ(out.side[0].output, Output::kError);
  EXPECT_NE(out.side[0].reason.find("too near the ends of Unix nanoseconds"), std::string::npos)
      << out.side[0].reason;
  Event fine = JsonEvent("{}");
  fine.event_time_ns = INT64_MAX - 2 * 3600 * kS;  // 2262, with room for its window
  win->Process(std::move(fine), out);
  EXPECT_EQ(out.side.size(), 2u);
}

}  // namespace
}  // namespace seedance::processors
