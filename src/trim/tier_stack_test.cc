// TierManager over unusual tiers: stacks that cannot work are refused, a tier failure that no
// trim can cure is returned as it is, and addresses map back to their buffers.
#include <gtest/gtest.h>

#include <chrono>
#include <condition_variable>
#include <cstring>
#include <mutex>
#include <thread>

#include "seedance/trim.h"
#include "trim/size_units_testing.h"

namespace seedance::trim {
namespace {

// A tier over host memory that says it is device memory (like the CUDA device tier) and can
// be told to fail allocations with a given code.
class ScriptedTier final : public Tier {
 public:
  ScriptedTier(MemoryKind kind, uint64_t capacity)
      : kind_(kind), inner_(MakeHostTier("inner", capacity)) {}
  const std::string& name() const override { return name_; }
  MemoryKind memory() const override { return kind_; }
  bool CanCopyFrom(const Tier&) const override { return true; }
  uint64_t capacity() const override { return inner_->capacity(); }
  uint64_t used() const override { return inner_->used(); }
  double fragmentation() const override { return inner_->fragmentation(); }
  Result<void*> Allocate(uint64_t size) override {
    if (fail_with != StatusCode::kOk) return Status(fail_with, "scripted failure");
    return inner_->Allocate(size);
  }
  void Free(void* p) override { inner_->Free(p); }
  Status CopyFrom(void* dst, const void* src, uint64_t size, const Tier&, CopyUrgency) override {
    {
      std::unique_lock<std::mutex> lock(mu_);
      open_cv_.wait(lock, [&] { return open_; });
    }
    std::memcpy(dst, src, size);
    return Status::Ok();
  }
  // Copies into this tier wait until Open() (a slow link; moves stay in flight).
  void Close() {
    std::lock_guard<std::mutex> lock(mu_);
    open_ = false;
  }
  void Open() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      open_ = true;
    }
    open_cv_.notify_all();
  }
  StatusCode fail_with = StatusCode::kOk;

 private:
  std::string name_ = "scripted";
  std::mutex mu_;
  std::condition_variable open_cv_;
  bool open_ = true;
  MemoryKind kind_;
  std::unique_ptr<Tier> inner_;
};

// A 256 KiB fast tier (address-keeping or plain) over a 1 MiB slow one.
std::unique_ptr<TierManager> HostManager(bool keeping, PolicyOptions o) {
  std::vector<std::unique_ptr<Tier>> tiers;
  tiers.push_back(keeping ? MakeAddressKeepingHostTier("fast", 256 * kKiB)
                          : MakeHostTier("fast", 256 * kKiB));
  tiers.push_back(MakeHostTier("slow", 1024 * kKiB));
  return TierManager::Create(std::move(tiers), o).value();
}

TEST(TierStackTest, AHostTierNextToDeviceMemoryIsRefused) {
  std::vector<std::unique_ptr<Tier>> tiers;
  tiers.push_back(std::make_unique<ScriptedTier>(MemoryKind::kDevice, 256 * kKiB));
  tiers.push_back(MakeHostTier("ram", 256 * kKiB));
  auto m = TierManager::Create(std::move(tiers));
  ASSERT_FALSE(m.has_value());
  EXPECT_EQ(m.error().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(m.error().message().find("'ram' cannot copy out of tier 'scripted' (device memory)"),
            std::string::npos)
      << m.error().message();
}

TEST(TierStackTest, AFailureOtherThanAFullTierIsReturnedWithoutTrimming) {
  std::vector<std::unique_ptr<Tier>> tiers;
  auto fast = std::make_unique<ScriptedTier>(MemoryKind::kHost, 256 * kKiB);
  ScriptedTier* scripted = fast.get();
  tiers.push_back(std::move(fast));
  tiers.push_back(MakeHostTier("slow", 1024 * kKiB));
  PolicyOptions o;
  o.min_victim_bytes = 0;
  auto m = TierManager::Create(std::move(tiers), o).value();
  auto idle = m->Register(128 * kKiB).value();
  m->Step();
  m->Step();
  scripted->fail_with = StatusCode::kInternal;  // e.g. a driver error, not out of memory
  auto r = m->Register(64 * kKiB);
  // The slower tier took it: the fast tier's failure moved nothing off it.
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(m->TierOf(*r).value(), 1);
  EXPECT_EQ(m->TierOf(idle).value(), 0);
  EXPECT_EQ(m->Stats().bytes_moved_down, 0u);
  // A stall needs the fast tier: the error comes back as it is.
  auto a = m->Acquire(*r);
  ASSERT_FALSE(a.has_value());
  EXPECT_EQ(a.error().code(), StatusCode::kInternal);
  EXPECT_EQ(m->TierOf(idle).value(), 0);
  scripted->fail_with = StatusCode::kResourceExhausted;  // full: room is made by trimming
  ASSERT_FALSE(m->Acquire(*r).has_value());              // (still failing: nothing fits)
  EXPECT_EQ(m->TierOf(idle).value(), 1);
}

TEST(TierStackTest, RoomIsMadeByWaitingForMovesInFlight) {
  std::vector<std::unique_ptr<Tier>> tiers;
  tiers.push_back(MakeHostTier("fast", 256 * kKiB));
  auto slow = std::make_unique<ScriptedTier>(MemoryKind::kHost, 1024 * kKiB);
  ScriptedTier* link = slow.get();
  tiers.push_back(std::move(slow));
  PolicyOptions o;
  o.min_victim_bytes = 0;
  o.idle_steps = 1;
  o.async_copies = true;
  auto m = TierManager::Create(std::move(tiers), o).value();
  auto a = m->Register(120 * kKiB).value();
  auto b = m->Register(120 * kKiB).value();
  link->Close();
  m->Step();  // both idle: their moves down start, and wait on the slow link
  // The link opens later; placing a new buffer and acquiring it need the room held by the
  // moves in flight: the manager waits for them instead of giving up (kResourceExhausted).
  std::thread opener([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    link->Open();
  });
  auto c = m->Register(120 * kKiB).value();
  auto p = m->Acquire(c);
  opener.join();
  ASSERT_TRUE(p.has_value()) << p.error().ToString();
  EXPECT_EQ(m->TierOf(c).value(), 0);
  ASSERT_TRUE(m->Release(c).ok());
  EXPECT_EQ(m->TierOf(a).value() + m->TierOf(b).value(), 2);
}

TEST(TierStackTest, LookupFindsTheBufferHoldingAnAddressWhereverItIs) {
  for (bool keeping : {false, true}) {
    SCOPED_TRACE(keeping ? "address-keeping fast tier" : "plain fast tier");
    PolicyOptions o;
    o.min_victim_bytes = 0;
    auto m = HostManager(keeping, o);
    auto a = m->Register(120 * kKiB).value();
    auto b = m->Register(100 * kKiB).value();
    char* pa = static_cast<char*>(m->Acquire(a).value());
    char* pb = static_cast<char*>(m->Acquire(b).value());
    EXPECT_EQ(m->Lookup(pa).value(), a);
    EXPECT_EQ(m->Lookup(pa + 120 * kKiB - 1).value(), a);
    EXPECT_EQ(m->Lookup(pb + 10).value(), b);
    int elsewhere = 0;
    EXPECT_EQ(m->Lookup(&elsewhere).error().code(), StatusCode::kNotFound);
    ASSERT_TRUE(m->Release(a).ok());
    ASSERT_TRUE(m->Release(b).ok());
    m->Step();
    ASSERT_GE(m->Trim(), 1u);  // 220 KiB over the 80% watermark of 256 KiB: a (the larger) goes
    ASSERT_EQ(m->TierOf(a).value(), 1);
    if (keeping) {
      EXPECT_EQ(m->Lookup(pa + 5).value(), a);  // its kept address
    } else {
      EXPECT_EQ(m->Lookup(pa + 5).error().code(), StatusCode::kNotFound);
    }
    char* back = static_cast<char*>(m->Acquire(a).value());
    EXPECT_EQ(m->Lookup(back + 99 * kKiB).value(), a);
    ASSERT_TRUE(m->Release(a).ok());
    ASSERT_TRUE(m->Unregister(a).ok());
    EXPECT_EQ(m->Lookup(back).error().code(), StatusCode::kNotFound);
  }
}

TEST(TierStackTest, AStableAddressIsKeptOrTheBufferStays) {
  for (bool keeping : {false, true}) {
    SCOPED_TRACE(keeping ? "address-keeping fast tier" : "plain fast tier");
    PolicyOptions o;
    o.min_victim_bytes = 0;
    o.low_watermark = 0.01;
    auto m = HostManager(keeping, o);
    auto stable = m->Register(64 * kKiB, "w", "", /*stable_address=*/true).value();
    auto plain = m->Register(64 * kKiB).value();
    void* p = m->Acquire(stable).value();
    static_cast<char*>(p)[5] = 42;
    ASSERT_TRUE(m->Release(stable).ok());
    m->Step();
    m->Trim();
    EXPECT_EQ(m->TierOf(plain).value(), 1);
    EXPECT_EQ(m->TierOf(stable).value(), keeping ? 1 : 0);  // moved only if its address stays
    void* back = m->Acquire(stable).value();
    EXPECT_EQ(back, p);
    EXPECT_EQ(static_cast<char*>(back)[5], 42);
    // A stable-address buffer goes on the fastest tier or nowhere.
    auto big = m->Register(300 * kKiB, "", "", /*stable_address=*/true);
    ASSERT_FALSE(big.has_value());
    EXPECT_EQ(big.error().code(), StatusCode::kResourceExhausted);
    EXPECT_NE(big.error().message().find("stable-address"), std::string::npos);
    ASSERT_TRUE(m->Release(stable).ok());
  }
}

TEST(TierStackTest, PeakUsedIsTheFastTiersHighWaterMark) {
  std::vector<std::unique_ptr<Tier>> tiers;
  tiers.push_back(MakeHostTier("fast", 256 * kKiB));
  tiers.push_back(MakeHostTier("slow", 1024 * kKiB));
  PolicyOptions o;
  o.min_victim_bytes = 0;
  auto m = TierManager::Create(std::move(tiers), o).value();
  std::vector<BufferId> ids;
  for (int i = 0; i < 6; ++i) {
    ids.push_back(m->Register(64 * kKiB).value());
    m->Step();
  }
  const TrimStats s = m->Stats();
  EXPECT_LE(s.tiers[0].peak_used, 256 * kKiB);
  EXPECT_GE(s.tiers[0].peak_used, 192 * kKiB);
  EXPECT_GE(s.tiers[0].peak_used, s.tiers[0].used);
  for (BufferId id : ids) ASSERT_TRUE(m->Unregister(id).ok());
  EXPECT_EQ(m->Stats().tiers[0].used, 0u);
  EXPECT_EQ(m->Stats().tiers[0].peak_used, s.tiers[0].peak_used);
}

}  // namespace
}  // namespace seedance::trim
