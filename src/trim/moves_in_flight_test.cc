#include "trim/moves_in_flight.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cstring>
#include <future>
#include <vector>

#include "trim/copy_job_testing.h"

namespace seedance::trim {
namespace {

using copy_testing::PlainJob;

// A host tier whose copies wait for the test to open its gate (bounded: 10 s).
class GatedTier final : public Tier {
 public:
  const std::string& name() const override { return name_; }
  uint64_t capacity() const override { return 1 << 20; }
  uint64_t used() const override { return 0; }
  double fragmentation() const override { return 0; }
  Result<void*> Allocate(uint64_t) override { return ResourceExhaustedError("not used"); }
  void Free(void*) override {}
  Status CopyFrom(void* dst, const void* src, uint64_t size, const Tier&, CopyUrgency) override {
    if (gate_.wait_for(std::chrono::seconds(10)) != std::future_status::ready) {
      return DeadlineExceededError("the test never opened the gate");
    }
    std::memcpy(dst, src, size);
    return Status::Ok();
  }
  void Open() { open_.set_value(); }

 private:
  std::string name_ = "gated";
  std::promise<void> open_;
  std::shared_future<void> gate_ = open_.get_future().share();
};

TEST(MovesInFlightTest, MovesNotDoneStayInFlightAndDoneOnesComeOutInStartOrder) {
  GatedTier tier;
  std::vector<char> src(100, 'x'), dst(300, 0);
  MovesInFlight moves;
  moves.Start(3, PlainJob(dst.data(), src.data(), 100, &tier));
  moves.Start(1, PlainJob(dst.data() + 100, src.data(), 100, &tier));
  moves.Start(2, PlainJob(dst.data() + 200, src.data(), 100, &tier));
  EXPECT_TRUE(moves.TakeDone(/*wait=*/false).empty()) << "the gate holds every copy";
  EXPECT_EQ(moves.size(), 3u);
  ASSERT_NE(moves.Find(1), nullptr);
  EXPECT_EQ(moves.Find(4), nullptr);
  tier.Open();
  auto done = moves.TakeDone(/*wait=*/true);
  ASSERT_EQ(done.size(), 3u);
  EXPECT_EQ(done[0].first, 3u);
  EXPECT_EQ(done[1].first, 1u);
  EXPECT_EQ(done[2].first, 2u);
  for (auto& [id, job] : done) EXPECT_TRUE(job->result.ok()) << id;
  EXPECT_TRUE(moves.empty());
  EXPECT_EQ(dst[299], 'x');
  EXPECT_EQ(moves.Find(1), nullptr) << "detached";
}

TEST(MovesInFlightTest, SettlingAMoveWaitsForItAndDetachesOnlyIt) {
  GatedTier tier;
  std::vector<char> src(100, 'y'), dst(200, 0);
  MovesInFlight moves;
  moves.Start(1, PlainJob(dst.data(), src.data(), 100, &tier));
  moves.Start(2, PlainJob(dst.data() + 100, src.data(), 100, &tier));
  EXPECT_EQ(moves.Settle(5), nullptr) << "nothing in flight for it";
  tier.Open();
  auto job = moves.Settle(2);
  ASSERT_NE(job, nullptr);
  EXPECT_TRUE(job->done.load()) << "settled: finished";
  EXPECT_EQ(dst[199], 'y');
  EXPECT_EQ(moves.Find(2), nullptr);
  // The same buffer may move again; the earlier move of 1 is still the first to come out.
  moves.Start(2, PlainJob(dst.data() + 100, src.data(), 100, &tier));
  auto done = moves.TakeDone(/*wait=*/true);
  ASSERT_EQ(done.size(), 2u);
  EXPECT_EQ(done[0].first, 1u);
  EXPECT_EQ(done[1].first, 2u);
}

}  // namespace
}  // namespace seedance::trim
