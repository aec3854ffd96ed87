// The weight-streaming executor (trim/stream_executor.h) on a fake asynchronous device: a copy
// stream and a compute stream, each a thread running its queue in order, events as latches.
// It proves the three properties issue 41 asks of the executor: no region of the ring is
// written before the compute that last used it is done, the host never waits (a whole
// iteration is issued while the device is stopped), and copies run ahead by the plan's
// lookahead.
#include "trim/stream_executor.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <functional>
#include <future>
#include <latch>
#include <map>
#include <memory>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

namespace seedance::trim {
namespace {

// One stream: a thread that runs its operations in order.
class FakeCopyStream {
 public:
  FakeCopyStream() : thread_([this] { Loop(); }) {}
  ~FakeCopyStream() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    thread_.join();
  }
  void Enqueue(std::function<void()> op) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      ops_.push_back(std::move(op));
    }
    cv_.notify_all();
  }

 private:
  void Loop() {
    std::unique_lock<std::mutex> lock(mu_);
    while (true) {
      cv_.wait(lock, [&] { return stop_ || !ops_.empty(); });
      if (ops_.empty()) return;
      auto op = std::move(ops_.front());
      ops_.pop_front();
      lock.unlock();
      op();
      lock.lock();
    }
  }
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> ops_;
  bool stop_ = false;
  std::thread thread_;
};

class FakeDevice final : public StreamDevice {
 public:
  explicit FakeDevice(uint32_t seed) : rng_(seed) {}
  ~FakeDevice() override { Start(); }  // a stopped device drains before the streams go

  // The device runs nothing until Start() (the host must get on without it).
  void Start() {
    if (!started_.exchange(true)) gate_.count_down();
  }

  Event CopyAfter(void* dst, const void* src, uint64_t bytes, Event after) override {
    const Event done = NewEvent();
    const auto delay = std::chrono::microseconds(Delay());
    copy_.Enqueue([this, dst, src, bytes, after, done, delay] {
      gate_.wait();
      if (after != 0) Latch(after).wait();  // on the device: the host never waits for it
      std::this_thread::sleep_for(delay);
      CheckNothingLiveIsOverwritten(static_cast<char*>(dst), bytes);
      std::memcpy(dst, src, bytes);
      Latch(done).count_down();
    });
    return done;
  }
  void ComputeWaits(Event e) override {
    compute_.Enqueue([this, e] { Latch(e).wait(); });
  }
  Event RecordCompute() override {
    const Event e = NewEvent();
    compute_.Enqueue([this, e] { Latch(e).count_down(); });
    return e;
  }

  // A unit's compute, issued on the compute stream: it reads the unit's bytes on the device
  // and compares them with what they must be.
  void Compute(const void* device, const void* expected, uint64_t bytes, std::string what) {
    const auto delay = std::chrono::microseconds(Delay());
    compute_.Enqueue([this, device, expected, bytes, what, delay] {
      gate_.wait();
      std::this_thread::sleep_for(delay);
      if (std::memcmp(device, expected, bytes) != 0) Fail(what + ": wrong bytes at compute");
      MarkComputed(static_cast<const char*>(device));
      ++computed_;
    });
  }
  // Waits for the compute stream to pass everything issued so far.
  void Drain() {
    std::promise<void> done;
    compute_.Enqueue([&] { done.set_value(); });
    done.get_future().wait();
  }
  std::vector<std::string> failures() {
    std::lock_guard<std::mutex> lock(mu_);
    return failures_;
  }
  uint64_t computed() const { return computed_; }

 private:
  int Delay() {
    std::lock_guard<std::mutex> lock(mu_);
    return static_cast<int>(rng_() % 200);
  }
  Event NewEvent() {
    std::lock_guard<std::mutex> lock(mu_);
    events_.push_back(std::make_unique<std::latch>(1));
    return events_.size();
  }
  std::latch& Latch(Event e) {
    std::lock_guard<std::mutex> lock(mu_);
    return *events_.at(e - 1);
  }
  void Fail(std::string why) {
    std::lock_guard<std::mutex> lock(mu_);
    failures_.push_back(std::move(why));
  }
  // Ring bytes a copy lands on: every region copied there before must have been computed.
  void CheckNothingLiveIsOverwritten(const char* dst, uint64_t bytes) {
    std::lock_guard<std::mutex> lock(mu_);
    for (auto it = regions_.begin(); it != regions_.end();) {
      const char* begin = it->first;
      const char* end = begin + it->second.bytes;
      if (begin < dst + bytes && dst < end) {
        if (!it->second.computed) {
          failures_.push_back("a copy overwrote a region before its compute ran");
        }
        it = regions_.erase(it);
      } else {
        ++it;
      }
    }
    regions_[dst] = Region{bytes, false};
  }
  void MarkComputed(const char* device) {
    std::lock_guard<std::mutex> lock(mu_);
    if (auto it = regions_.find(device); it != regions_.end()) it->second.computed = true;
  }

  struct Region {
    uint64_t bytes;
    bool computed;
  };
  std::mutex mu_;
  std::mt19937 rng_;
  std::vector<std::unique_ptr<std::latch>> events_;
  std::map<const char*, Region> regions_;
  std::vector<std::string> failures_;
  std::atomic<uint64_t> computed_{0};
  std::latch gate_{1};
  std::atomic<bool> started_{false};
  FakeCopyStream copy_;  // last: their threads stop before what they use goes
  FakeCopyStream compute_;
};

struct Model {
  std::vector<UnitRecord> records;
  std::vector<std::vector<unsigned char>> host;  // each unit's bytes
  std::vector<std::vector<unsigned char>> resident;
};

Model MakeModel(uint32_t seed, size_t n) {
  std::mt19937 rng(seed);
  Model m;
  for (size_t i = 0; i < n; ++i) {
    const uint64_t bytes = 256 + rng() % (48 * 1024);
    m.records.push_back({bytes, 1e-4 * (1 + rng() % 10)});
    std::vector<unsigned char> v(bytes);
    for (auto& b : v) b = static_cast<unsigned char>(rng());
    m.host.push_back(std::move(v));
  }
  return m;
}

// Runs `iterations` iterations on the host: Begin, the unit's compute, End, for every unit.
Status RunIterations(StreamExecutor& ex, FakeDevice& device, Model& m, int iterations) {
  for (int it = 0; it < iterations; ++it) {
    for (size_t i = 0; i < m.records.size(); ++i) {
      auto p = ex.Begin(i);
      if (!p) return p.error();
      device.Compute(*p, m.host[i].data(), m.records[i].bytes,
                     "unit " + std::to_string(i) + " iteration " + std::to_string(it));
      SEEDANCE_RETURN_IF_ERROR(ex.End(i));
    }
  }
  return Status::Ok();
}

TEST(StreamExecutorTest, CopiesRunAheadNeverOverwriteALiveRegionAndTheHostNeverWaits) {
  for (uint32_t seed : {1u, 2u, 3u}) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    Model m = MakeModel(seed, 24);
    uint64_t model = 0;
    for (const auto& r : m.records) model += r.bytes;
    auto plan = PlanStream(m.records, {.budget = model * 4 / 10, .link_bytes_per_second = 1e9});
    ASSERT_TRUE(plan.has_value()) << plan.error().ToString();
    ASSERT_GT(plan->streamed_bytes, 0u);
    std::vector<StreamUnit> units;
    for (size_t i = 0; i < m.records.size(); ++i) {
      m.resident.emplace_back(plan->resident[i] ? m.records[i].bytes : 0);
      if (plan->resident[i])
        std::memcpy(m.resident[i].data(), m.host[i].data(), m.records[i].bytes);
      units.push_back({m.host[i].data(), m.resident[i].data(), m.records[i].bytes});
    }
    std::vector<char> ring(plan->ring_bytes);
    FakeDevice device(seed);
    StreamExecutor ex(*plan, units, ring.data(), device);

    // The device is stopped: if Begin or End waited for a copy or a compute, this would hang.
    auto host = std::async(std::launch::async, [&] { return RunIterations(ex, device, m, 3); });
    const bool host_done = host.wait_for(std::chrono::seconds(20)) == std::future_status::ready;
    // Read before Start: once started, the compute stream may run at once.
    const uint64_t computed_while_stopped = device.computed();
    device.Start();
    ASSERT_TRUE(host_done) << "the host waited for the device";
    ASSERT_TRUE(host.get().ok());
    EXPECT_EQ(computed_while_stopped, 0u) << "nothing ran before the device started";
    // Then host and device together.
    ASSERT_TRUE(RunIterations(ex, device, m, 3).ok());
    device.Drain();

    EXPECT_EQ(device.computed(), 6 * m.records.size());
    EXPECT_EQ(device.failures(), std::vector<std::string>{});
    const StreamExecutorStats& s = ex.stats();
    // Each streamed unit once per iteration, and the next iteration's first ones already on
    // their way (at most the ring's worth).
    EXPECT_GE(s.bytes_copied, 6 * plan->streamed_bytes);
    EXPECT_LE(s.bytes_copied, 6 * plan->streamed_bytes + plan->ring_bytes);
    EXPECT_EQ(s.issued_at_begin, 1u) << "only the very first copy waits for its unit to begin";
    EXPECT_GE(s.most_ahead, plan->simulated.lookahead) << "the plan's lookahead holds";
    EXPECT_EQ(s.order_misses, 0u);
  }
}

// A plan under half the model's bytes at 1 GB/s, and the executor's view of the units (each
// with resident memory of its own).
Result<StreamPlan> PlanHalf(const Model& m) {
  uint64_t model = 0;
  for (const auto& r : m.records) model += r.bytes;
  return PlanStream(m.records, {.budget = model / 2, .link_bytes_per_second = 1e9});
}

std::vector<StreamUnit> Units(Model& m) {
  std::vector<StreamUnit> units;
  for (size_t i = 0; i < m.records.size(); ++i) {
    m.resident.emplace_back(m.records[i].bytes);
    units.push_back({m.host[i].data(), m.resident[i].data(), m.records[i].bytes});
  }
  return units;
}

TEST(StreamExecutorTest, AnotherOrderIsRefusedSoThePlanIsRecordedAgain) {
  Model m = MakeModel(7, 8);
  auto plan = PlanHalf(m);
  ASSERT_TRUE(plan.has_value());
  std::vector<StreamUnit> units = Units(m);
  std::vector<char> ring(plan->ring_bytes);
  FakeDevice device(7);
  device.Start();
  StreamExecutor ex(*plan, units, ring.data(), device);
  auto skipped = ex.Begin(1);
  ASSERT_FALSE(skipped.has_value());
  EXPECT_EQ(skipped.error().code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(skipped.error().message().find("record the iteration again"), std::string::npos);
  EXPECT_EQ(ex.End(0).code(), StatusCode::kFailedPrecondition) << "End without Begin";
  EXPECT_EQ(ex.stats().order_misses, 2u);
  ASSERT_TRUE(ex.Begin(0).has_value());
  EXPECT_FALSE(ex.Begin(0).has_value()) << "twice without End";
  ASSERT_TRUE(ex.End(0).ok());
}

// A device whose call failed (a CUDA error: the calls cannot return one) makes Begin and End
// fail with that error from then on, instead of handing out bytes that may never arrive.
class FailingDevice final : public StreamDevice {
 public:
  Event CopyAfter(void* dst, const void* src, uint64_t bytes, Event) override {
    if (copies_left_ == 0) {
      health_ = Status(StatusCode::kUnavailable, "CUDA copy: an illegal address");
      return 0;
    }
    --copies_left_;
    std::memcpy(dst, src, bytes);
    return ++events_;
  }
  void ComputeWaits(Event) override {}
  Event RecordCompute() override { return ++events_; }
  Status Health() const override { return health_; }

 private:
  int copies_left_ = 1;
  Event events_ = 0;
  Status health_ = Status::Ok();
};

TEST(StreamExecutorTest, ADeviceErrorIsReturnedFromBeginAndEnd) {
  Model m = MakeModel(11, 6);
  auto plan = PlanHalf(m);
  ASSERT_TRUE(plan.has_value());
  std::vector<StreamUnit> units = Units(m);
  std::vector<char> ring(plan->ring_bytes);
  FailingDevice device;
  StreamExecutor ex(*plan, units, ring.data(), device);
  Status first_error = Status::Ok();
  for (size_t i = 0; i < units.size() && first_error.ok(); ++i) {
    auto p = ex.Begin(i);
    if (!p.has_value()) {
      first_error = p.error();
      break;
    }
    first_error = ex.End(i);
  }
  ASSERT_FALSE(first_error.ok()) << "the second copy failed: some call must say so";
  EXPECT_EQ(first_error.code(), StatusCode::kUnavailable);
  EXPECT_NE(first_error.message().find("illegal address"), std::string::npos);
  auto again = ex.Begin(0);
  ASSERT_FALSE(again.has_value());
  EXPECT_EQ(again.error().code(), StatusCode::kUnavailable) << "sticky";
}

}  // namespace
}  // namespace seedance::trim
