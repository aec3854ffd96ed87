#include "governor/memory_budget.h"

#include <gtest/gtest.h>

#include <map>
#include <set>

namespace seedance::governor {
namespace {

// Batches by id; Evict() refuses the ids in `busy` (being sent).
class FakeHolder : public BatchHolder {
 public:
  explicit FakeHolder(MemoryBudget& budget) : budget_(budget) {}
  void Add(uint64_t id, uint64_t size, uint64_t step) {
    batches_[id] = {.id = id, .size = size, .last_used_step = step};
    budget_.Charge(size);
  }
  void ListBatches(std::vector<BufferState>* out) override {
    for (const auto& [id, b] : batches_) out->push_back(b);
  }
  uint64_t Evict(uint64_t id) override {
    if (busy.count(id)) return 0;
    auto it = batches_.find(id);
    const uint64_t size = it->second.size;
    budget_.Credit(size);
    batches_.erase(it);
    evicted.push_back(id);
    return size;
  }
  void OnRoom() override { ++rooms; }

  std::set<uint64_t> busy;
  std::vector<uint64_t> evicted;
  int rooms = 0;

 private:
  MemoryBudget& budget_;
  std::map<uint64_t, BufferState> batches_;
};

MemoryBudgetOptions Options(uint64_t capacity) {
  MemoryBudgetOptions o;
  o.capacity = capacity;
  o.reserve_share = 0;  // occupancy against the whole capacity: easier arithmetic
  return o;
}

// A budget with one FakeHolder registered.
struct BudgetWithHolder {
  explicit BudgetWithHolder(const MemoryBudgetOptions& o) : budget(o, metrics), h(budget) {
    budget.AddHolder(&h);
  }
  observe::MetricsRegistry metrics;
  MemoryBudget budget;
  FakeHolder h;
};

TEST(MemoryBudgetTest, QueuedCapacityLeavesTheReserve) {
  observe::MetricsRegistry metrics;
  MemoryBudgetOptions o;
  o.capacity = 16 << 20;
  MemoryBudget budget(o, metrics);
  const uint64_t queued = (16u << 20) * 6 / 10;  // 40% reserved
  EXPECT_NEAR(static_cast<double>(budget.queued_capacity()), static_cast<double>(queued), 1.0);
  EXPECT_TRUE(budget.HasRoom(budget.queued_capacity()));
  budget.Charge(1);
  EXPECT_FALSE(budget.HasRoom(budget.queued_capacity()));
  budget.Credit(1);
  EXPECT_TRUE(budget.HasRoom(budget.queued_capacity()));
}

TEST(MemoryBudgetTest, OccupancyTrimEvictsInScoreOrderUnderTheWatermarkSkippingBusyOnes) {
  BudgetWithHolder t(Options(1000));
  auto& [metrics, budget, h] = t;
  // 950 of 1000: over 92%. Scores at step 3: id 1 = 100 × 3, id 2 = 300 × 3 (busy),
  // id 3 = 200 × 2, id 4 = 350 × 1.
  h.Add(1, 100, 0);
  h.Add(2, 300, 0);
  h.Add(3, 200, 1);
  h.Add(4, 350, 2);
  h.busy = {2};
  EXPECT_EQ(budget.Step(), TrimReason::kNone);       // step 1
  EXPECT_EQ(budget.Step(), TrimReason::kNone);       // step 2
  EXPECT_EQ(budget.Step(), TrimReason::kOccupancy);  // step 3: third sample at ≥ 92%
  // Needs 150 freed (to 800): id 2 is refused, id 3 (score 400) is enough.
  EXPECT_EQ(h.evicted, (std::vector<uint64_t>{3}));
  EXPECT_EQ(budget.used(), 750u);
  EXPECT_EQ(h.rooms, 1);
  EXPECT_EQ(metrics.GetCounter("seedance_memory_evictions_refused_total", "", {}).Value(), 1u);
  EXPECT_EQ(metrics.GetCounter("seedance_memory_moved_bytes_total", "", {{"to", "disk"}}).Value(),
            200u);
  EXPECT_EQ(
      metrics.GetCounter("seedance_memory_trims_total", "", {{"reason", "occupancy"}}).Value(), 1u);
}

TEST(MemoryBudgetTest, OccupancyJustUnderTheTriggerNeverTrims) {
  BudgetWithHolder t(Options(1000));
  auto& [metrics, budget, h] = t;
  h.Add(1, 919, 0);
  for (int i = 0; i < 20; ++i) EXPECT_EQ(budget.Step(), TrimReason::kNone);
  EXPECT_TRUE(h.evicted.empty());
}

TEST(MemoryBudgetTest, IdleShareTrimTakesEveryLongIdleBatchEvenUnderTheWatermark) {
  MemoryBudgetOptions o = Options(1000);
  o.policy.idle_steps = 5;
  BudgetWithHolder t(o);
  auto& [metrics, budget, h] = t;
  h.Add(1, 100, 0);  // idle from step 0
  h.Add(2, 50, 0);
  h.Add(3, 100, 4);  // handed over later
  // Idle share at step 5: 150 / 250 = 60% > 35%.
  for (int i = 0; i < 4; ++i) EXPECT_EQ(budget.Step(), TrimReason::kNone);
  EXPECT_EQ(budget.Step(), TrimReason::kIdleShare);
  EXPECT_EQ(h.evicted, (std::vector<uint64_t>{1, 2}));
  EXPECT_EQ(budget.used(), 100u);
}

TEST(MemoryBudgetTest, RemovedHolderIsNotAsked) {
  observe::MetricsRegistry metrics;
  MemoryBudget budget(Options(1000), metrics);
  FakeHolder a(budget), b(budget);
  budget.AddHolder(&a);
  budget.AddHolder(&b);
  a.Add(1, 500, 0);
  b.Add(1, 450, 0);  // same local id in another holder
  budget.RemoveHolder(&a);
  for (int i = 0; i < 3; ++i) budget.Step();
  EXPECT_TRUE(a.evicted.empty());
  EXPECT_EQ(b.evicted, (std::vector<uint64_t>{1}));
}

}  // namespace
}  // namespace seedance::governor
