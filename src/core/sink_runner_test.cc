// SinkRunner in durable mode under a memory budget: evicted batches go back to the durable
// queue, the runner probes with one batch, and everything is delivered exactly once.
#include "core/sink_runner.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <future>
#include <set>

namespace seedance {
namespace {

namespace fs = std::filesystem;

// Holds every batch until the test completes it; Evict() gives back any batch it holds (all
// are "between attempts"), completing it synchronously.
class HoldingSink : public Sink {
 public:
  void Deliver(std::shared_ptr<const Batch> batch, DeliveryCallback done) override {
    held.push_back({std::move(batch), std::move(done)});
    ++deliveries;
  }
  int MaxInFlight() const override { return 4; }
  size_t MaxBatchEvents() const override { return 10; }
  bool Evict(const Batch& batch) override {
    for (auto it = held.begin(); it != held.end(); ++it) {
      if (it->first.get() != &batch) continue;
      auto done = std::move(it->second);
      held.erase(it);
      done(ResourceExhaustedError("evicted"));
      return true;
    }
    return false;
  }
  // Completes the oldest held batch with `status`; returns its event ids.
  std::vector<std::string> CompleteOldest(Status status) {
    auto [batch, done] = std::move(held.front());
    held.erase(held.begin());
    std::vector<std::string> ids;
    for (const Event& e : batch->events) ids.push_back(e.payload);
    done(std::move(status));
    return ids;
  }

  std::vector<std::pair<std::shared_ptr<const Batch>, DeliveryCallback>> held;
  int deliveries = 0;
};

class SinkRunnerBudgetTest : public ::testing::Test {
 protected:
  SinkRunnerBudgetTest() {
    config_.data_dir = (fs::temp_directory_path() /
                        ("sink_runner_test_" + std::to_string(::getpid()) + "_" +
                         ::testing::UnitTest::GetInstance()->current_test_info()->name()))
                           .string();
    fs::remove_all(config_.data_dir);
  }
  ~SinkRunnerBudgetTest() override {
    loop_.Join();
    runner_.reset();
    queue_.reset();
    fs::remove_all(config_.data_dir);
  }

  // Runs `fn` on the loop and waits for it.
  template <typename Fn>
  auto OnLoop(Fn fn) {
    std::packaged_task<decltype(fn())()> task(std::move(fn));
    auto result = task.get_future();
    loop_.Post([&task] { task(); });
    return result.get();
  }

  observe::MetricsRegistry metrics_;
  QueueConfig config_;
  EventLoop loop_;
  std::unique_ptr<DurableQueue> queue_;
  std::unique_ptr<SinkRunner> runner_;
};

TEST_F(SinkRunnerBudgetTest, EvictedBatchesAreReadAgainAfterAProbeAndDeliveredOnce) {
  auto queue = DurableQueue::Open(config_, metrics_);
  ASSERT_TRUE(queue.has_value()) << queue.error().ToString();
  queue_ = std::move(queue).value();
  governor::MemoryBudgetOptions o;
  o.capacity = 64 << 20;
  o.policy.idle_steps = 1;
  governor::MemoryBudget budget(o, metrics_);
  ComponentStats stats(metrics_, "sink", "held");
  auto sink = std::make_unique<HoldingSink>();
  HoldingSink* s = sink.get();
  int rejected = 0;
  runner_ = std::make_unique<SinkRunner>(
      "held", std::move(sink), 100, loop_, stats,
      [&rejected](Event&&, const std::string&) { ++rejected; },
      queue_->OpenCursor("held", {Output::kMain}), &budget);
  budget.AddHolder(runner_.get());
  loop_.Start();

  for (int i = 0; i < 40; ++i) {
    Event e;
    e.payload = std::to_string(i);
    ASSERT_TRUE(queue_->Append(Output::kMain, e).ok());
  }
  ASSERT_TRUE(queue_->Commit().ok());
  runner_->NotifyAppended();
  // Four batches of ten held by the sink (its in-flight limit), all charged.
  ASSERT_EQ(OnLoop([&] { return s->held.size(); }), 4u);
  EXPECT_EQ(budget.used(), 40 * sizeof(Event));  // short strings live inside the Event

  // Handed over at step 0; at step 1 every batch has been idle 1 step → idle-share trim.
  EXPECT_EQ(OnLoop([&] { return budget.Step(); }), governor::TrimReason::kIdleShare);
  // All four evicted; the runner went on with a single probe: the first range again.
  EXPECT_EQ(OnLoop([&] { return s->held.size(); }), 1u);
  EXPECT_EQ(OnLoop([&] { return s->deliveries; }), 5);
  EXPECT_EQ(metrics_.GetCounter("seedance_memory_evictions_total", "", {}).Value(), 4u);

  std::multiset<std::string> delivered;
  auto complete = [&] {
    for (auto& id : s->CompleteOldest(Status::Ok())) delivered.insert(id);
    return s->held.size();
  };
  // The probe succeeds: the sink is ready, the returned ranges are read back, four at a time.
  EXPECT_EQ(OnLoop(complete), 3u);
  while (OnLoop([&] { return s->held.size(); }) > 0) OnLoop(complete);
  EXPECT_EQ(delivered.size(), 40u);
  for (int i = 0; i < 40; ++i) EXPECT_EQ(delivered.count(std::to_string(i)), 1u) << i;
  EXPECT_EQ(rejected, 0);
  EXPECT_EQ(budget.used(), 0u);
  EXPECT_GT(metrics_.GetCounter("seedance_memory_moved_bytes_total", "", {{"to", "memory"}}).Value(),
            0u);
  EXPECT_EQ(OnLoop([&] { return runner_->Pending(); }), 0u);
  OnLoop([&] {
    runner_->Stop();
    return 0;
  });
}

}  // namespace
}  // namespace seedance
