#include "trim/ordered_events.h"

#include <gtest/gtest.h>

#include <random>
#include <vector>

namespace seedance::trim {
namespace {

// A stream whose events pass in order, as far as the test lets it run: `done` ids have passed.
// Each handle remembers the id last recorded into it, as a CUDA event does.
struct FakeStream {
  OrderedEvents events;
  std::vector<uint64_t> handle_id;  // by slot: the id last recorded there
  uint64_t done = 0;

  uint64_t Record() {
    int queries = 0;  // docs: at most one query of a handle per record
    const auto r = events.Record([&](size_t slot) {
      ++queries;
      return handle_id[slot] <= done;
    });
    EXPECT_LE(queries, 1);
    if (r.new_slot) {
      EXPECT_EQ(r.slot, handle_id.size());
      handle_id.push_back(0);
    }
    handle_id[r.slot] = r.id;
    return r.id;
  }
};

TEST(OrderedEventsTest, IdsGrowByOneAndZeroIsNoEvent) {
  FakeStream s;
  EXPECT_EQ(s.Record(), 1u);
  EXPECT_EQ(s.Record(), 2u);
  EXPECT_FALSE(s.events.Find(0).has_value());
  EXPECT_EQ(s.events.Find(1), std::optional<size_t>(0));
  EXPECT_EQ(s.events.Find(2), std::optional<size_t>(1));
}

TEST(OrderedEventsTest, AHandleIsReusedOnlyOnceItsEventPassed) {
  FakeStream s;
  s.Record();  // 1 in slot 0
  s.Record();  // 2 in slot 1
  EXPECT_EQ(s.events.slots(), 2u);
  s.Record();  // nothing passed: 3 needs a third handle
  EXPECT_EQ(s.events.slots(), 3u);
  s.done = 1;
  EXPECT_EQ(s.Record(), 4u);  // takes slot 0, which held 1
  EXPECT_EQ(s.events.slots(), 3u);
  EXPECT_EQ(s.events.Find(4), std::optional<size_t>(0));
  EXPECT_FALSE(s.events.Find(1).has_value()) << "1 passed: nothing to wait for";
  EXPECT_EQ(s.events.passed_through(), 1u);
}

// Random schedules: a pending id is always found in the handle that holds it (never one taken
// by a later id), and the handles never outnumber the most events ever pending at once.
TEST(OrderedEventsTest, RandomSchedulesNeverLoseAPendingEvent) {
  for (uint32_t seed = 1; seed <= 20; ++seed) {
    std::mt19937 rng(seed);
    FakeStream s;
    uint64_t recorded = 0;
    uint64_t most_pending = 0;
    for (int step = 0; step < 3000; ++step) {
      if (rng() % 3 != 0 || recorded == s.done) {
        recorded = s.Record();
      } else {
        s.done += 1 + rng() % (recorded - s.done);  // the stream runs ahead a little
      }
      most_pending = std::max(most_pending, recorded - s.done);
      const uint64_t probe = 1 + rng() % recorded;
      const auto slot = s.events.Find(probe);
      if (probe > s.done && probe > s.events.passed_through()) {
        ASSERT_TRUE(slot.has_value()) << "seed " << seed << " id " << probe;
      }
      if (slot) {
        ASSERT_EQ(s.handle_id[*slot], probe) << "seed " << seed << ": a reused handle";
      }
    }
    EXPECT_LE(s.events.slots(), most_pending) << "seed " << seed;
  }
}

}  // namespace
}  // namespace seedance::trim
