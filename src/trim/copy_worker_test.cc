#include "trim/copy_worker.h"

#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "trim/copy_job_testing.h"
#include "trim/zero_block_codec.h"

namespace seedance::trim {
namespace {

using copy_testing::PlainJob;

// A host tier that records the order of the copies it runs, and can fail them.
class RecordingTier final : public Tier {
 public:
  const std::string& name() const override { return name_; }
  uint64_t capacity() const override { return 1 << 20; }
  uint64_t used() const override { return 0; }
  double fragmentation() const override { return 0; }
  Result<void*> Allocate(uint64_t) override { return ResourceExhaustedError("not used"); }
  void Free(void*) override {}
  Status CopyFrom(void* dst, const void* src, uint64_t size, const Tier&,
                  CopyUrgency urgency) override {
    if (urgency != CopyUrgency::kBackground) return InternalError("a background copy, waited");
    if (size == 13) return InternalError("refused");
    std::memcpy(dst, src, size);
    order.push_back(size);
    return Status::Ok();
  }
  std::vector<uint64_t> order;  // only the worker's thread writes it

 private:
  std::string name_ = "recording";
};

TEST(CopyWorkerTest, RunsJobsInSubmissionOrderAndReportsEach) {
  RecordingTier tier;
  std::vector<char> src(1000, 'x'), dst(1000, 0);
  std::vector<std::shared_ptr<CopyWorker::Job>> jobs;
  {
    CopyWorker worker;
    for (uint64_t size : {100, 13, 300, 200}) {
      jobs.push_back(PlainJob(dst.data(), src.data(), size, &tier));
      worker.Submit(jobs.back());
    }
    worker.Wait(*jobs.back());
    EXPECT_TRUE(jobs.back()->done.load());
    EXPECT_TRUE(jobs.front()->done.load()) << "in order: the first is done before the last";
  }
  EXPECT_EQ(tier.order, (std::vector<uint64_t>{100, 300, 200}));
  EXPECT_TRUE(jobs[0]->result.ok());
  EXPECT_EQ(jobs[1]->result.code(), StatusCode::kInternal) << "a failed copy says so";
  EXPECT_GE(jobs[2]->seconds, 0.0);
  EXPECT_EQ(dst[299], 'x');
}

TEST(CopyWorkerTest, ACodecJobEncodesDownAndDecodesBack) {
  auto fast = MakeHostTier("fast", 1 << 20);
  auto slow = MakeHostTier("slow", 1 << 20);
  std::vector<unsigned char> data(64 * 1024, 0);
  for (size_t i = 0; i < data.size(); i += 4096) data[i] = 7;  // a block in 16 non-zero
  const uint64_t encoded = ZeroBlockEncodedSize(std::as_bytes(std::span(data.data(), data.size())));
  std::vector<unsigned char> packed(encoded), back(data.size(), 0xEE);
  CopyWorker worker;
  auto down = PlainJob(packed.data(), data.data(), data.size(), slow.get());
  down->from = fast.get();
  down->codec = fast.get();
  down->encoded = encoded;
  auto up = PlainJob(back.data(), packed.data(), data.size(), fast.get());
  up->from = slow.get();
  up->down = false;
  up->codec = fast.get();
  up->encoded = encoded;
  worker.Submit(down);
  worker.Submit(up);
  worker.Wait(*up);
  ASSERT_TRUE(down->result.ok()) << down->result.ToString();
  ASSERT_TRUE(up->result.ok()) << up->result.ToString();
  EXPECT_EQ(back, data);
  EXPECT_LT(encoded, data.size() / 8);
}

}  // namespace
}  // namespace seedance::trim
