#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "eventtime/dd_sketch.h"
#include "eventtime/event_time.h"
#include "eventtime/watermark_tracker.h"
#include "eventtime/window_store.h"
#include "util/little_endian.h"

namespace seedance::eventtime {
namespace {

constexpr int64_t kS = 1'000'000'000;

int64_t JsonTime(const char* json, TimeFormat f = TimeFormat::kAuto) {
  rapidjson::Document d;
  d.Parse(json);
  auto t = EventTimeFromJson(d["t"], f);
  EXPECT_TRUE(t.has_value()) << json << ": " << (t ? "" : t.error().message());
  return t ? *t : 0;
}

TEST(EventTimeTest, EpochUnitsAndRfc3339) {
  const int64_t expect = 1795993563'000'000'000;  // 2026-11-29T23:06:03Z
  EXPECT_EQ(JsonTime(R"({"t":1795993563})"), expect);
  EXPECT_EQ(JsonTime(R"({"t":1795993563000})"), expect);
  EXPECT_EQ(JsonTime(R"({"t":1795993563000000})"), expect);
  EXPECT_EQ(JsonTime(R"({"t":1795993563000000000})"), expect);
  EXPECT_EQ(JsonTime(R"({"t":1795993563.5})"), expect + kS / 2);
  EXPECT_EQ(JsonTime(R"({"t":"2026-11-29T23:06:03Z"})"), expect);
  EXPECT_EQ(JsonTime(R"({"t":"2026-11-30T00:06:03.250+01:00"})"), expect + kS / 4);
  EXPECT_EQ(JsonTime(R"({"t":5})", TimeFormat::kMillis), 5'000'000);
  EXPECT_EQ(FormatRfc3339(expect + 7'000'000), "2026-11-29T23:06:03.007Z");
}

TEST(EventTimeTest, BadTimesSayWhy) {
  for (const char* bad : {"2026-11-29T23:06:03", "2026-13-01T00:00:00Z", "yesterday",
                          "2026-11-29T23:06:03Zjunk", "2026-11-29T23:06:03.Z"}) {
    auto t = ParseRfc3339(bad);
    ASSERT_FALSE(t.has_value()) << bad;
    EXPECT_NE(t.error().message().find("RFC 3339"), std::string::npos);
  }
  rapidjson::Document d;
  d.Parse(R"({"t":true,"n":-5,"s":"2026-11-29T23:06:03Z"})");
  EXPECT_FALSE(EventTimeFromJson(d["t"], TimeFormat::kAuto).has_value());
  EXPECT_FALSE(EventTimeFromJson(d["n"], TimeFormat::kAuto).has_value());
  EXPECT_FALSE(EventTimeFromJson(d["s"], TimeFormat::kMillis).has_value());
  // Beyond what int64 nanoseconds hold: refused, not wrapped (before, 2^64 - 1 ns came out
  // as -1 and year 9999 as an overflowed product).
  d.Parse(R"({"u":18446744073709551615,"big":9223372036854775807})");
  auto wrapped = EventTimeFromJson(d["u"], TimeFormat::kAuto);
  ASSERT_FALSE(wrapped.has_value());
  EXPECT_NE(wrapped.error().message().find("beyond the year 2262"), std::string::npos);
  EXPECT_EQ(*EventTimeFromJson(d["big"], TimeFormat::kNanos), INT64_MAX);
  for (const char* far : {"9999-12-31T23:59:59Z", "0001-01-01T00:00:00Z", "2262-04-12T00:00:00Z",
                          "1677-09-21T00:12:45Z", "1899-12-31T23:59:59Z"}) {
    auto t = ParseRfc3339(far);
    ASSERT_FALSE(t.has_value()) << far;
    EXPECT_NE(t.error().message().find("outside the years 1900 to 2262"), std::string::npos);
  }
  EXPECT_EQ(*ParseRfc3339("2262-04-10T00:00:00Z") / 1'000'000'000, 9'223'200'000);
  EXPECT_EQ(*ParseRfc3339("1969-12-31T23:59:59Z"), -1'000'000'000);
  EXPECT_EQ(*ParseRfc3339("1900-01-01T00:00:00Z"), -2'208'988'800'000'000'000);
}

TEST(DDSketchTest, QuantilesWithinTheRelativeErrorAndSurviveSerialization) {
  std::mt19937_64 rng(7);
  for (int round = 0; round < 50; ++round) {
    DDSketch sketch;
    std::vector<double> values;
    std::lognormal_distribution<double> lognormal(0, 2);
    const int n = 1 + static_cast<int>(rng() % 2000);
    for (int i = 0; i < n; ++i) {
      double v = lognormal(rng) * ((rng() % 4 == 0) ? -1 : 1);
      if (rng() % 50 == 0) v = 0;
      sketch.Add(v);
      values.push_back(v);
    }
    std::string bytes;
    sketch.AppendTo(bytes);
    std::string_view in = bytes;
    DDSketch copy;
    ASSERT_TRUE(copy.ReadFrom(in));
    EXPECT_TRUE(in.empty());
    std::sort(values.begin(), values.end());
    for (double q : {0.0, 0.01, 0.25, 0.5, 0.9, 0.95, 0.99, 1.0}) {
      const double truth = values[static_cast<size_t>(std::floor(q * (n - 1)))];
      for (const DDSketch* s : {&sketch, &copy}) {
        EXPECT_LE(std::fabs(s->Quantile(q) - truth),
                  DDSketch::kRelativeAccuracy * std::fabs(truth) + 1e-9)
            << "q=" << q << " n=" << n;
      }
    }
  }
}

TEST(WatermarkTrackerTest, StaleIsJudgedAgainstTheWatermarkBeforeTheEvent) {
  WatermarkTracker t({.max_out_of_order_ns = 5 * kS, .allowed_lateness_ns = 10 * kS});
  EXPECT_FALSE(t.Observe("", 100 * kS, 0).stale);
  EXPECT_EQ(t.Watermark(), 95 * kS);
  EXPECT_FALSE(t.Observe("", 85 * kS, 0).stale);  // exactly at watermark − lateness
  auto v = t.Observe("", 85 * kS - 1, 0);
  EXPECT_TRUE(v.stale);
  EXPECT_EQ(v.lateness_ns, 10 * kS + 1);
}

TEST(WatermarkTrackerTest, AnIdleSourceDoesNotHoldTheOthersBack) {
  WatermarkTracker t({.scope = WatermarkOptions::Scope::kSource,
                      .max_out_of_order_ns = 0,
                      .allowed_lateness_ns = kS,
                      .idle_timeout_ns = 30 * kS});
  t.Observe("b", 50 * kS, 0);
  t.Observe("a", 100 * kS, 0);
  EXPECT_EQ(t.Watermark(), 50 * kS);  // the slower source holds the stream
  t.Observe("a", 200 * kS, 31 * kS);  // b silent for 31 s of wall clock
  t.Tick(31 * kS);
  EXPECT_EQ(t.Watermark(), 200 * kS);
}

TEST(WatermarkTrackerTest, AnIdleStreamAdvancesWithTheWallClock) {
  WatermarkTracker t({.max_out_of_order_ns = 2 * kS, .idle_timeout_ns = 10 * kS});
  t.Observe("", 1000 * kS, 1000 * kS);
  t.Tick(1005 * kS);
  EXPECT_EQ(t.Watermark(), 998 * kS);
  t.Tick(1020 * kS);  // silent for 20 s: now − idle − out-of-order
  EXPECT_EQ(t.Watermark(), 1008 * kS);
  std::vector<int64_t> advances;
  t.TakeAdvances([&](std::string_view, int64_t w) { advances.push_back(w); });
  EXPECT_EQ(advances, std::vector<int64_t>{1008 * kS});
}

// ---- Property test: watermark + window against a brute-force reference ----

struct Ev {
  std::string key;
  int64_t t;
  double v;
};

struct Agg {
  uint64_t count = 0;
  double sum = 0, min = 0, max = 0;
  std::vector<double> values;
};

struct Case {
  WatermarkOptions wm;
  WindowSpec spec;
  std::vector<Ev> events;
};

Case RandomCase(uint64_t seed, bool per_key) {
  std::mt19937_64 rng(seed);
  Case c;
  c.wm.scope = per_key ? WatermarkOptions::Scope::kKey : WatermarkOptions::Scope::kStream;
  c.wm.max_out_of_order_ns = static_cast<int64_t>(rng() % 3) * 2 * kS;
  c.wm.allowed_lateness_ns = static_cast<int64_t>(rng() % 3) * 4 * kS;
  c.wm.idle_timeout_ns = INT64_MAX / 4;  // no wall clock in this test
  const int64_t size = (rng() % 2 == 0 ? 5 : 10) * kS;
  const int64_t divisors[] = {1, 2, 5};
  c.spec.size_ns = size;
  c.spec.slide_ns = size / divisors[rng() % 3];
  c.spec.allowed_lateness_ns = c.wm.allowed_lateness_ns;
  const int n = 20 + static_cast<int>(rng() % 200);
  const int keys = 1 + static_cast<int>(rng() % 4);
  int64_t clock = 1'000 * kS;
  for (int i = 0; i < n; ++i) {
    clock += static_cast<int64_t>(rng() % 2000) * 1'000'000;  // 0..2 s apart
    int64_t delay = 0;
    switch (rng() % 10) {
      case 0:
        delay = static_cast<int64_t>(rng() % 30) * kS;
        break;  // far behind: often stale
      case 1:
      case 2:
        delay = static_cast<int64_t>(rng() % 8000) * 1'000'000;
        break;
      default:
        break;
    }
    c.events.push_back({"k" + std::to_string(rng() % keys), clock - delay,
                        static_cast<double>(static_cast<int>(rng() % 400) - 100) / 4});
  }
  return c;
}

void CheckCase(uint64_t seed, bool per_key) {
  Case c = RandomCase(seed, per_key);
  SCOPED_TRACE(::testing::Message() << "seed " << seed << (per_key ? " per key" : " stream"));
  // System under test.
  WatermarkTracker tracker(c.wm);
  WindowStore store(c.spec);
  std::map<std::pair<std::string, int64_t>, WindowAggregate> emitted;
  auto emit = [&](const WindowResult& r) {
    emitted[{std::string(r.key), r.start_ns}] = *r.aggregate;
  };
  std::vector<bool> stale(c.events.size());
  for (size_t i = 0; i < c.events.size(); ++i) {
    const Ev& e = c.events[i];
    auto verdict = tracker.Observe(e.key, e.t, 0);
    stale[i] = verdict.stale;
    if (!verdict.stale) {
      ASSERT_TRUE(store.Add(e.key, e.t, e.v, true, 0, emit)) << "event " << i;
    }
    tracker.TakeAdvances(
        [&](std::string_view scope, int64_t w) { store.AdvanceWatermark(scope, w, emit); });
  }
  store.AdvanceWatermark("", INT64_MAX / 2, emit);  // end of input: everything fires
  EXPECT_EQ(store.key_count(), 0u);

  // Reference: maximum event time so far (per key when per_key), windows by enumeration.
  std::map<std::string, int64_t> max_t;
  std::map<std::pair<std::string, int64_t>, Agg> expected;
  for (size_t i = 0; i < c.events.size(); ++i) {
    const Ev& e = c.events[i];
    const std::string scope = per_key ? e.key : "";
    auto it = max_t.find(scope);
    const bool is_stale =
        it != max_t.end() && e.t < it->second - c.wm.max_out_of_order_ns - c.wm.allowed_lateness_ns;
    ASSERT_EQ(stale[i], is_stale) << "event " << i << " t=" << e.t;
    if (is_stale) continue;
    max_t[scope] = it == max_t.end() ? e.t : std::max(it->second, e.t);
    for (int64_t s = (e.t / c.spec.slide_ns) * c.spec.slide_ns; s > e.t - c.spec.size_ns;
         s -= c.spec.slide_ns) {
      Agg& a = expected[{e.key, s}];
      a.min = a.count == 0 ? e.v : std::min(a.min, e.v);
      a.max = a.count == 0 ? e.v : std::max(a.max, e.v);
      a.sum += e.v;
      ++a.count;
      a.values.push_back(e.v);
    }
  }
  ASSERT_EQ(emitted.size(), expected.size());
  for (auto& [window, want] : expected) {
    auto got = emitted.find(window);
    ASSERT_NE(got, emitted.end()) << window.first << "@" << window.second;
    EXPECT_EQ(got->second.count, want.count);
    EXPECT_EQ(got->second.sum, want.sum);  // quarter values: sums are exact
    EXPECT_EQ(got->second.min, want.min);
    EXPECT_EQ(got->second.max, want.max);
    std::sort(want.values.begin(), want.values.end());
    for (double q : {0.5, 0.95, 0.99}) {
      const double truth = want.values[static_cast<size_t>(std::floor(q * (want.count - 1)))];
      EXPECT_LE(std::fabs(got->second.sketch.Quantile(q) - truth),
                DDSketch::kRelativeAccuracy * std::fabs(truth) + 1e-9);
    }
  }
}

TEST(WindowPropertyTest, StreamWatermarkMatchesBruteForce) {
  for (uint64_t seed = 1; seed <= 2000; ++seed) {
    CheckCase(seed, false);
    if (::testing::Test::HasFailure()) return;
  }
}

TEST(WindowPropertyTest, PerKeyWatermarkMatchesBruteForce) {
  for (uint64_t seed = 10001; seed <= 12000; ++seed) {
    CheckCase(seed, true);
    if (::testing::Test::HasFailure()) return;
  }
}

// The checkpoint as the log keeps it: each entry's last value, an empty one deleting it.
using Saved = std::map<std::string, std::string>;

std::function<void(std::string_view, std::string_view)> Into(Saved& saved) {
  return [&saved](std::string_view k, std::string_view v) {
    if (v.empty()) {
      saved.erase(std::string(k));
    } else {
      saved[std::string(k)] = std::string(v);
    }
  };
}

size_t WindowEntries(const Saved& saved) {
  return std::count_if(saved.begin(), saved.end(),
                       [](const auto& e) { return e.first.rfind("w:", 0) == 0; });
}

// Every emission: (key, start, update) → count, sum, min, max.
using Emissions = std::map<std::tuple<std::string, int64_t, uint32_t>,
                           std::tuple<uint64_t, double, double, double>>;

// Runs a case taking the state after every event (a batch each), and every `restart_every`
// events (0: never) starts again from what was taken, as a process restarted from its
// checkpoint would.
Emissions RunWithCheckpoints(const Case& c, size_t restart_every) {
  auto tracker = std::make_unique<WatermarkTracker>(c.wm);
  auto store = std::make_unique<WindowStore>(c.spec);
  Emissions out;
  auto emit = [&](const WindowResult& r) {
    out[{std::string(r.key), r.start_ns, r.update}] = {r.aggregate->count, r.aggregate->sum,
                                                       r.aggregate->min, r.aggregate->max};
  };
  Saved saved_wm, saved_win;
  for (size_t i = 0; i < c.events.size(); ++i) {
    if (restart_every > 0 && i > 0 && i % restart_every == 0) {
      tracker = std::make_unique<WatermarkTracker>(c.wm);
      for (auto& [k, v] : saved_wm) EXPECT_TRUE(tracker->RestoreState(k, v, 0).ok());
      store = std::make_unique<WindowStore>(c.spec);
      for (auto& [k, v] : saved_win) EXPECT_TRUE(store->RestoreState(k, v, 0).ok()) << k;
    }
    const Ev& e = c.events[i];
    if (!tracker->Observe(e.key, e.t, 0).stale) store->Add(e.key, e.t, e.v, true, 0, emit);
    tracker->TakeAdvances(
        [&](std::string_view s, int64_t w) { store->AdvanceWatermark(s, w, emit); });
    tracker->TakeChangedState(Into(saved_wm));
    store->TakeChangedState(Into(saved_win));
    EXPECT_EQ(WindowEntries(saved_win), store->window_count())
        << "an entry for every window in state, none for one gone";
  }
  store->AdvanceWatermark("", INT64_MAX / 2, emit);
  store->TakeChangedState(Into(saved_win));
  EXPECT_EQ(saved_win.size(), 1u) << "every window and key gone: only the stream's watermark";
  return out;
}

TEST(WindowStoreTest, CheckpointsTakenAfterEveryEventRestoreToTheSameResults) {
  for (uint64_t seed = 1; seed <= 120; ++seed) {
    for (bool per_key : {false, true}) {
      SCOPED_TRACE(::testing::Message() << "seed " << seed << (per_key ? " per key" : ""));
      const Case c = RandomCase(seed, per_key);
      const Emissions once = RunWithCheckpoints(c, 0);
      ASSERT_FALSE(once.empty());
      EXPECT_EQ(RunWithCheckpoints(c, 1), once);
      EXPECT_EQ(RunWithCheckpoints(c, 7), once);
      if (::testing::Test::HasFailure()) return;
    }
  }
}

// The point of a window's own entry: a key keeps a window per slide for allowed_lateness after
// it fired, and an event updates one of them; the checkpoint takes that one, not the key's all.
TEST(WindowStoreTest, AnEventCheckpointsOnlyTheWindowsItChanged) {
  WindowStore store({.size_ns = kS, .slide_ns = kS, .allowed_lateness_ns = 300 * kS});
  auto ignore = [](const WindowResult&) {};
  for (int s = 0; s < 60; ++s) store.Add("d", (1000 + s) * kS, s, true, 0, ignore);
  store.AdvanceWatermark("", 1060 * kS, ignore);  // all 60 fired, all within the lateness
  Saved saved;
  store.TakeChangedState(Into(saved));
  EXPECT_EQ(WindowEntries(saved), 60u);
  std::vector<std::string> taken;
  store.Add("d", 1061 * kS + 5, 1, true, 0, ignore);
  store.Add("d", 1061 * kS + 6, 2, true, 0, ignore);  // the same window again
  store.TakeChangedState([&](std::string_view k, std::string_view) { taken.emplace_back(k); });
  ASSERT_EQ(taken.size(), 1u) << "one window changed, of 61";
  std::string name("w:d\0", 4);
  util::PutRaw<int64_t>(name, 1061 * kS);
  EXPECT_EQ(taken[0], name);
  taken.clear();
  store.TakeChangedState([&](std::string_view k, std::string_view) { taken.emplace_back(k); });
  EXPECT_TRUE(taken.empty()) << "nothing changed since";
}

// A checkpoint written before windows had entries of their own ("k:<key>": the key's watermark
// and every window) restores, and the next take replaces it with the new form.
TEST(WindowStoreTest, AKeysEntryOfTheFormerFormRestoresAndIsRewrittenInTheNewOne) {
  const WindowSpec spec{.size_ns = 10 * kS, .slide_ns = 10 * kS, .allowed_lateness_ns = 60 * kS};
  std::string old;
  util::PutRaw<int64_t>(old, 1015 * kS);  // the key's own watermark: [1000, 1010) fired
  util::PutRaw<uint32_t>(old, 2);
  for (auto [start, count, sum, emissions] :
       {std::tuple<int64_t, uint64_t, double, uint32_t>{1000 * kS, 2, 3, 1},
        {1010 * kS, 1, 5, 0}}) {
    util::PutRaw<int64_t>(old, start);
    util::PutRaw<uint64_t>(old, count);
    util::PutRaw<double>(old, sum);
    util::PutRaw<double>(old, 1);        // min
    util::PutRaw<double>(old, sum - 1);  // max
    util::PutRaw<uint32_t>(old, emissions);
    DDSketch sketch;
    for (uint64_t i = 0; i < count; ++i) sketch.Add(1);
    sketch.AppendTo(old);
  }
  auto check = [&](WindowStore& store) {
    std::vector<std::tuple<int64_t, uint64_t, double, uint32_t>> got;
    auto emit = [&](const WindowResult& r) {
      got.emplace_back(r.start_ns, r.aggregate->count, r.aggregate->sum, r.update);
    };
    store.Add("a", 1002 * kS, 4, true, 0, emit);   // late, within the lateness: an update
    store.AdvanceWatermark("a", 1020 * kS, emit);  // fires [1010, 1020)
    using T = std::tuple<int64_t, uint64_t, double, uint32_t>;
    EXPECT_EQ(got, (std::vector<T>{{1000 * kS, 3, 7, 1}, {1010 * kS, 1, 5, 0}}));
  };
  WindowStore restored(spec);
  ASSERT_TRUE(restored.RestoreState("k:a", old, 0).ok());
  EXPECT_EQ(restored.window_count(), 2u);
  Saved saved{{"k:a", old}};
  restored.TakeChangedState(Into(saved));
  EXPECT_EQ(saved.count("k:a"), 0u) << "the former entry deleted";
  EXPECT_EQ(WindowEntries(saved), 2u);
  EXPECT_EQ(saved.count("m:a"), 1u) << "the key's watermark";
  WindowStore again(spec);
  for (auto& [k, v] : saved) ASSERT_TRUE(again.RestoreState(k, v, 0).ok()) << k;
  check(restored);
  check(again);
  EXPECT_FALSE(again.RestoreState(std::string("w:a\0", 4) + "1234567", "", 0).ok())
      << "a window name cut short";
  EXPECT_FALSE(again.RestoreState(std::string("w:a\0", 4) + "12345678", "short", 0).ok());
}

}  // namespace
}  // namespace seedance::eventtime
