#include "core/delivery/batch_pool.h"

#include <gtest/gtest.h>

#include "core/delivery/memory_batch_source.h"
#include "governor/memory_budget.h"

namespace seedance::delivery {
namespace {

class BatchPoolTest : public ::testing::Test {
 protected:
  void Fill(Batch& b, size_t n, size_t payload_bytes = 8) {
    b.events.resize(n);
    for (Event& e : b.events) e.payload.assign(payload_bytes, 'x');
  }
  observe::MetricsRegistry metrics_;
  ComponentStats stats_{metrics_, "sink", "p"};
  MemoryBatchSource source_{10, stats_};
  observe::Counter hits_, misses_;
  BatchPool pool_{source_, hits_, misses_};
};

TEST_F(BatchPoolTest, ABatchIsReusedOnceNobodyElseHoldsIt) {
  std::shared_ptr<Batch> a = pool_.Take();
  std::shared_ptr<Batch> b = pool_.Take();  // `a` is held: a new one
  EXPECT_NE(a, b);
  EXPECT_EQ(misses_.Value(), 2u);
  Batch* raw = a.get();
  a.reset();
  EXPECT_EQ(pool_.Take().get(), raw);
  EXPECT_EQ(hits_.Value(), 1u);
  EXPECT_EQ(pool_.size(), 2u);
}

TEST_F(BatchPoolTest, TrimKeepsAFewSmallBatchesStorageAndFreesTheRest) {
  std::vector<std::shared_ptr<Batch>> held;
  for (int i = 0; i < 6; ++i) {
    held.push_back(pool_.Take());
    Fill(*held.back(), 100);
  }
  held.clear();
  pool_.Trim();
  int keeping = 0;
  for (int i = 0; i < 6; ++i) {
    std::shared_ptr<Batch> b = pool_.Take();
    EXPECT_LE(b->events.size(), 16u);
    EXPECT_LE(b->events.capacity(), 32u);
    if (b->events.capacity() > 0) ++keeping;
    held.push_back(b);
  }
  EXPECT_EQ(keeping, 4);
}

TEST_F(BatchPoolTest, AFreeBatchHoldingLargePayloadsIsReleasedAtOnce) {
  std::shared_ptr<Batch> b = pool_.Take();
  Fill(*b, 2, 16 * governor::MemoryBudget::kPooledBufferBytes);
  Batch* raw = b.get();
  pool_.ReleaseLarge();
  EXPECT_EQ(raw->events.size(), 2u);  // still held: kept
  b.reset();
  pool_.ReleaseLarge();
  EXPECT_EQ(raw->events.capacity(), 0u);
}

}  // namespace
}  // namespace seedance::delivery
