// DurableBatchSource over a real DurableQueue in a temporary directory (its files through a
// FaultFileSystem, so that reads can be made to fail).
#include "core/delivery/durable_batch_source.h"

#include <gtest/gtest.h>

#include <filesystem>

#include <cerrno>

#include "storage/durable_queue.h"
#include "testing/fault_file_system.h"
#include "testing/test_dir.h"

namespace seedance::delivery {
namespace {

namespace fs = std::filesystem;

class DurableBatchSourceTest : public ::testing::Test {
 protected:
  DurableBatchSourceTest() {
    config_.data_dir = testing::FreshTestDir("durable_batch_source_test");
    files_ = std::make_unique<testing::FaultFileSystem>(config_.data_dir);
    OpenQueue();
  }
  void OpenQueue() {
    auto queue = storage::DurableQueue::Open(config_, metrics_, *files_);
    ASSERT_TRUE(queue.has_value());
    queue_ = std::move(queue).value();
  }
  ~DurableBatchSourceTest() override {
    source_.reset();
    queue_.reset();
    fs::remove_all(config_.data_dir);
  }
  void Restart() {
    source_->Stop();
    source_.reset();
    queue_.reset();
    OpenQueue();
    Open();
  }
  void Open(governor::MemoryBudget* budget = nullptr) {
    source_ = std::make_unique<DurableBatchSource>(queue_->OpenCursor("s", {Output::kMain}),
                                                   routing_, budget, stats_);
  }
  void Append(const std::string& topic, int n) {
    for (int i = 0; i < n; ++i) {
      Event e;
      e.topic = topic;
      e.payload = topic + std::to_string(i);
      ASSERT_TRUE(queue_->Append(Output::kMain, e).ok());
    }
    ASSERT_TRUE(queue_->Commit().ok());
  }

  observe::MetricsRegistry metrics_;
  ComponentStats stats_{metrics_, "sink", "s"};
  storage::QueueConfig config_;
  std::unique_ptr<testing::FaultFileSystem> files_;
  std::unique_ptr<storage::DurableQueue> queue_;
  Routing routing_;
  std::unique_ptr<DurableBatchSource> source_;
};

TEST_F(DurableBatchSourceTest, RecordsForOtherTopicsAreSkippedAndFinished) {
  routing_.topics = {"mine/#"};
  Open();
  Append("other", 4);
  Append("mine/a", 2);
  EXPECT_EQ(source_->Waiting(), 6u);
  std::vector<Event> events;
  Lease lease;
  ASSERT_TRUE(source_->Take(4, &events, &lease));  // the first 4 records are skipped
  ASSERT_EQ(events.size(), 2u);
  EXPECT_EQ(events[0].payload, "mine/a0");
  EXPECT_EQ(lease.last - lease.first, 1u);  // the range of the two records taken
  EXPECT_EQ(stats_.events_in.Value(), 2u);
  EXPECT_EQ(source_->Waiting(), 0u);
  EXPECT_FALSE(source_->Take(4, &events, &lease));
  EXPECT_EQ(stats_.queue_depth.Value(), 0);
}

TEST_F(DurableBatchSourceTest, TheBudgetIsChargedWhileAJobHoldsItsBatchAndProbesAfterEviction) {
  governor::MemoryBudgetOptions o;
  o.capacity = 64 << 20;
  governor::MemoryBudget budget(o, metrics_);
  Open(&budget);
  EXPECT_TRUE(source_->Evictable());
  Append("t", 6);
  std::vector<Event> a, b;
  Lease la, lb;
  ASSERT_TRUE(source_->Take(3, &a, &la));
  EXPECT_EQ(la.bytes, governor::MemoryBudget::BatchChargeBytes(3 * sizeof(Event)));
  EXPECT_EQ(budget.used(), la.bytes);
  EXPECT_TRUE(source_->Admits(1, 3));  // room for another
  ASSERT_TRUE(source_->Take(3, &b, &lb));
  EXPECT_EQ(budget.used(), la.bytes + lb.bytes);
  // Evicted: credited, read again first, and one job at a time until a delivery.
  source_->Evicted(la);
  EXPECT_EQ(budget.used(), lb.bytes);
  EXPECT_TRUE(source_->probing());
  EXPECT_TRUE(source_->ReadingAgain());
  EXPECT_FALSE(source_->Admits(1, 3));
  EXPECT_TRUE(source_->Admits(0, 3));  // nothing outstanding: always progress
  std::vector<Event> again;
  Lease lagain;
  ASSERT_TRUE(source_->Take(3, &again, &lagain));
  EXPECT_EQ(again[0].payload, "t0");
  EXPECT_EQ(lagain.first, la.first);
  EXPECT_EQ(stats_.events_in.Value(), 6u);  // read again: not counted twice
  // A job of only refused events does not end the probe; one delivered event does.
  source_->Delivered(lb, /*delivered_any=*/false);
  EXPECT_TRUE(source_->probing());
  source_->Delivered(lagain, /*delivered_any=*/true);
  EXPECT_FALSE(source_->probing());
  EXPECT_EQ(budget.used(), 0u);
}

TEST_F(DurableBatchSourceTest, AJobShutDownIsNotFinishedAndIsReadAgainAfterARestart) {
  Open();
  Append("t", 3);
  std::vector<Event> events;
  Lease lease;
  ASSERT_TRUE(source_->Take(3, &events, &lease));
  source_->ShutDown(lease, 3);
  EXPECT_EQ(source_->Stop(), 0u);  // nothing dropped: it stays in the queue
  Restart();
  ASSERT_TRUE(source_->Take(3, &events, &lease));
  EXPECT_EQ(events.size(), 3u);
  // Delivered this time: after a restart nothing is read again.
  source_->Delivered(lease, true);
  Restart();
  EXPECT_FALSE(source_->Take(3, &events, &lease));
}

std::vector<std::string> Payloads(const std::vector<Event>& events) {
  std::vector<std::string> out;
  for (const Event& e : events) out.push_back(e.payload);
  return out;
}

uint64_t ReadErrors(observe::MetricsRegistry& metrics) {
  return metrics.GetCounter("seedance_queue_read_errors_total", "", {{"component", "s"}}).Value();
}

// Out of descriptors, the segment cannot be opened: before, that read as "nothing waits", and
// the sink stopped until the next append (none came: the events stayed undelivered).
TEST_F(DurableBatchSourceTest, ASegmentThatCannotBeOpenedIsTakenAgainLaterAndNothingIsSkipped) {
  Open();
  Append("t", 3);
  files_->FailNext(testing::FaultFileSystem::Op::kOpen, EMFILE, 3, "/queue/0");
  std::vector<Event> events;
  Lease lease;
  ::testing::internal::CaptureStderr();
  EXPECT_FALSE(source_->Take(3, &events, &lease));
  EXPECT_EQ(source_->TakeAgainAfter(), DurableBatchSource::kReadRetry);  // the runner's timer
  EXPECT_EQ(source_->Waiting(), 3u);
  EXPECT_FALSE(source_->Take(3, &events, &lease));
  EXPECT_FALSE(source_->Take(3, &events, &lease));
  EXPECT_EQ(ReadErrors(metrics_), 3u);
  ASSERT_TRUE(source_->Take(3, &events, &lease));
  const std::string log = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(Payloads(events), (std::vector<std::string>{"t0", "t1", "t2"}));
  EXPECT_EQ(source_->TakeAgainAfter(), std::chrono::milliseconds(0));
  // Three failures within 10 s: one line; and one when it works again.
  auto count = [&log](const std::string& text) {
    size_t n = 0;
    for (size_t at = log.find(text); at != std::string::npos; at = log.find(text, at + 1)) ++n;
    return n;
  };
  EXPECT_EQ(count("cannot read the durable queue: Too many open files"), 1u) << log;
  EXPECT_EQ(count("reading the durable queue again"), 1u) << log;
}

// A read that fails at the end of a full segment: before, its records were counted as damage
// and skipped for the next segment's.
TEST_F(DurableBatchSourceTest, AReadErrorInAClosedSegmentSkipsNoRecord) {
  config_.segment_bytes = 1;  // every commit rolls to a new segment
  queue_.reset();
  OpenQueue();
  Open();
  Append("t", 2);
  Append("u", 2);
  files_->FailNext(testing::FaultFileSystem::Op::kRead, EIO, 1, "/queue/0");
  std::vector<Event> events, all;
  Lease lease;
  EXPECT_FALSE(source_->Take(10, &events, &lease));
  EXPECT_EQ(source_->TakeAgainAfter(), DurableBatchSource::kReadRetry);
  while (source_->Take(10, &events, &lease)) all.insert(all.end(), events.begin(), events.end());
  EXPECT_EQ(Payloads(all), (std::vector<std::string>{"t0", "t1", "u0", "u1"}));
  EXPECT_EQ(ReadErrors(metrics_), 1u);
}

// An evicted range read again while its segment cannot be opened: before, it came back empty
// and was finished as if it held only other sinks' records, its events never delivered.
TEST_F(DurableBatchSourceTest, AnEvictedRangeThatCannotBeReadAgainIsNotFinished) {
  governor::MemoryBudgetOptions o;
  o.capacity = 64 << 20;
  governor::MemoryBudget budget(o, metrics_);
  Open(&budget);
  Append("t", 6);
  std::vector<Event> a, again;
  Lease la, lagain;
  ASSERT_TRUE(source_->Take(3, &a, &la));
  source_->Evicted(la);
  files_->FailNext(testing::FaultFileSystem::Op::kOpen, EMFILE, 1, "/queue/0");
  EXPECT_FALSE(source_->Take(3, &again, &lagain));
  EXPECT_TRUE(source_->ReadingAgain());
  EXPECT_EQ(source_->TakeAgainAfter(), DurableBatchSource::kReadRetry);
  ASSERT_TRUE(source_->Take(3, &again, &lagain));
  EXPECT_EQ(Payloads(again), (std::vector<std::string>{"t0", "t1", "t2"}));
  EXPECT_EQ(lagain.first, la.first);
  EXPECT_EQ(lagain.last, la.last);
  EXPECT_EQ(budget.used(), lagain.bytes);  // charged once, for the batch held now
}

}  // namespace
}  // namespace seedance::delivery
