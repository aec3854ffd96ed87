// SinkRunner's delivery policy with a scripted sink: eviction of waiting batches under a
// memory budget, Retry-After capped by retry_max, retry_limit, splitting, timeouts, and one
// outcome per batch. (Real sinks through the runner: tests/conformance.)
#include "core/delivery/sink_runner.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <fcntl.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <future>
#include <set>
#include <thread>

#include "testing/fault_file_system.h"
#include "testing/test_dir.h"
#include "util/clock.h"
#include "util/loop_signal.h"

namespace seedance {
namespace {

namespace fs = std::filesystem;
using std::chrono::milliseconds;

// Holds every attempt until the test answers it.
class HoldingSink : public Sink {
 public:
  struct Held {
    uint64_t id;
    std::vector<std::string> payloads;
    AttemptCallback done;
  };
  void Attempt(uint64_t id, const Batch& batch, AttemptCallback done) override {
    Held h{id, {}, std::move(done)};
    for (const Event& e : batch.events) h.payloads.push_back(e.payload);
    held.push_back(std::move(h));
    ++attempts;
    started_at.push_back(std::chrono::steady_clock::now());
  }
  void Abort(uint64_t id) override {
    aborted.push_back(id);
    aborted_at.push_back(std::chrono::steady_clock::now());
  }
  // Answers the oldest held attempt; returns its payloads.
  std::vector<std::string> AnswerOldest(AttemptOutcome outcome) {
    Held h = std::move(held.front());
    held.erase(held.begin());
    h.done(std::move(outcome));
    return h.payloads;
  }

  std::vector<Held> held;
  std::vector<uint64_t> aborted;
  int attempts = 0;
  std::vector<std::chrono::steady_clock::time_point> started_at;  // of each attempt
  std::vector<std::chrono::steady_clock::time_point> aborted_at;
};

class SinkRunnerTest : public ::testing::Test {
 protected:
  SinkRunnerTest() {
    config_.data_dir = testing::FreshTestDir("sink_runner_test");
    files_ = std::make_unique<testing::FaultFileSystem>(config_.data_dir);
    auto queue = storage::DurableQueue::Open(config_, metrics_, *files_);
    EXPECT_TRUE(queue.has_value());
    queue_ = std::move(queue).value();
  }
  ~SinkRunnerTest() override {
    if (runner_) loop_.Call([&] { runner_->Stop(); });
    loop_.Join();
    runner_.reset();
    queue_.reset();
    fs::remove_all(config_.data_dir);
  }

  void Start(DeliveryPolicy policy, governor::MemoryBudget* budget = nullptr) {
    auto sink = std::make_unique<HoldingSink>();
    sink_ = sink.get();
    runner_ = std::make_unique<SinkRunner>(
        "held", std::move(sink), policy, 100, loop_, stats_,
        [this](Event&& e, const std::string& reason) { rejected_.emplace_back(e.payload, reason); },
        queue_->OpenCursor("held", {Output::kMain}), budget);
    if (budget) budget->AddHolder(runner_.get());
    loop_.Start();
  }

  void Append(int n) {
    for (int i = 0; i < n; ++i) {
      Event e;
      e.payload = std::to_string(next_++);
      ASSERT_TRUE(queue_->Append(Output::kMain, e).ok());
    }
    ASSERT_TRUE(queue_->Commit().ok());
    runner_->NotifyAppended();
  }

  template <typename Fn>
  auto OnLoop(Fn fn) {
    return loop_.Call(fn);
  }
  // Waits up to 5 s for `done` (evaluated on the loop).
  template <typename Fn>
  bool WaitFor(Fn done) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    while (!OnLoop(done)) {
      if (std::chrono::steady_clock::now() > deadline) return false;
      std::this_thread::sleep_for(milliseconds(2));
    }
    return true;
  }

  observe::MetricsRegistry metrics_;
  ComponentStats stats_{metrics_, "sink", "held"};
  storage::QueueConfig config_;
  std::unique_ptr<testing::FaultFileSystem> files_;  // the queue's files
  EventLoop loop_;
  std::unique_ptr<storage::DurableQueue> queue_;
  std::unique_ptr<SinkRunner> runner_;
  std::vector<std::unique_ptr<SinkRunner>> retired_;  // replaced; kept until the loop ends
  HoldingSink* sink_ = nullptr;
  std::vector<std::pair<std::string, std::string>> rejected_;  // loop only
  int next_ = 0;
};

DeliveryPolicy Policy(int concurrency, size_t batch = 10) {
  DeliveryPolicy p;
  p.batch_events = batch;
  p.concurrency.initial = p.concurrency.min = p.concurrency.max = concurrency;
  p.retry_initial = milliseconds(1);
  p.retry_max = milliseconds(5);
  return p;
}

TEST_F(SinkRunnerTest, BatchesWaitingForARetryAreEvictedReadAgainAfterAProbeAndDeliveredOnce) {
  governor::MemoryBudgetOptions o;
  o.capacity = 64 << 20;
  o.policy.idle_steps = 1;
  governor::MemoryBudget budget(o, metrics_);
  DeliveryPolicy policy = Policy(4);
  policy.retry_initial = policy.retry_max = milliseconds(3600 * 1000);  // they wait
  Start(policy, &budget);
  Append(40);
  // Four batches of ten (the concurrency limit), all charged; each fails once and waits.
  ASSERT_TRUE(WaitFor([&] { return sink_->held.size() == 4; }));
  // Short strings live inside the Event; each batch is charged again for its request.
  EXPECT_EQ(budget.used(), governor::MemoryBudget::BatchChargeBytes(40 * sizeof(Event)));
  OnLoop([&] {
    for (int i = 0; i < 4; ++i) sink_->AnswerOldest(AttemptOutcome::Retry("busy"));
    return 0;
  });
  // Handed over at step 0; at step 1 every batch has been idle 1 step → idle-share trim.
  EXPECT_EQ(OnLoop([&] { return budget.Step(); }), governor::TrimReason::kIdleShare);
  EXPECT_EQ(metrics_.GetCounter("seedance_memory_evictions_total", "", {}).Value(), 4u);
  // All four evicted; the runner went on with a single probe: the first range again.
  ASSERT_TRUE(WaitFor([&] { return sink_->held.size() == 1; }));
  EXPECT_EQ(OnLoop([&] { return sink_->attempts; }), 5);

  std::multiset<std::string> delivered;
  auto answer = [&] {
    for (auto& id : sink_->AnswerOldest(AttemptOutcome::Delivered())) delivered.insert(id);
    return 0;
  };
  OnLoop(answer);  // the probe succeeds: the sink is ready, the rest is read back
  while (delivered.size() < 40) {
    ASSERT_TRUE(WaitFor([&] { return !sink_->held.empty(); }));
    OnLoop(answer);
  }
  for (int i = 0; i < 40; ++i) EXPECT_EQ(delivered.count(std::to_string(i)), 1u) << i;
  EXPECT_TRUE(OnLoop([&] { return rejected_.empty(); }));
  ASSERT_TRUE(WaitFor([&] { return runner_->Pending() == 0; }));
  EXPECT_EQ(budget.used(), 0u);
  EXPECT_GT(
      metrics_.GetCounter("seedance_memory_moved_bytes_total", "", {{"to", "memory"}}).Value(), 0u);
  budget.RemoveHolder(runner_.get());
}

// A reload replaces the sink: Drain lets the open job finish and starts no other; Retire
// saves the position and lets go of the cursor; the next runner of that name resumes right
// after what was delivered. A job still open past the drain's deadline is read again by the
// next runner, and its late answer to the retired one moves nothing.
TEST_F(SinkRunnerTest, ADrainedAndRetiredRunnerHandsItsPositionToTheNextOne) {
  Start(Policy(1));
  Append(30);
  ASSERT_TRUE(WaitFor([&] { return sink_->held.size() == 1; }));
  auto drained = std::async(std::launch::async, [&] {
    return runner_->Drain(std::chrono::steady_clock::now() + std::chrono::seconds(5));
  });
  std::this_thread::sleep_for(milliseconds(20));
  OnLoop([&] { return sink_->AnswerOldest(AttemptOutcome::Delivered()); });  // 0-9
  EXPECT_TRUE(drained.get());
  EXPECT_EQ(OnLoop([&] { return sink_->attempts; }), 1);  // no job after the drain began

  auto replace = [&] {
    OnLoop([&] {
      runner_->Retire();
      return 0;
    });
    retired_.push_back(std::move(runner_));
    auto sink = std::make_unique<HoldingSink>();
    sink_ = sink.get();
    runner_ = std::make_unique<SinkRunner>(
        "held", std::move(sink), Policy(1), 100, loop_, stats_, [](Event&&, const std::string&) {},
        queue_->OpenCursor("held", {Output::kMain}));
    runner_->NotifyAppended();
  };
  replace();
  ASSERT_TRUE(WaitFor([&] { return sink_->held.size() == 1; }));
  EXPECT_EQ(OnLoop([&] { return sink_->held.front().payloads.front(); }), "10");

  // The job 10-19 stays open past the drain's deadline.
  EXPECT_FALSE(runner_->Drain(std::chrono::steady_clock::now() + milliseconds(30)));
  HoldingSink* late = sink_;
  replace();
  ASSERT_TRUE(WaitFor([&] { return sink_->held.size() == 1; }));
  EXPECT_EQ(OnLoop([&] { return sink_->held.front().payloads.front(); }), "10");
  OnLoop([&] { return late->AnswerOldest(AttemptOutcome::Delivered()); });
  OnLoop([&] { return sink_->AnswerOldest(AttemptOutcome::Delivered()); });  // 10-19
  ASSERT_TRUE(WaitFor([&] { return sink_->held.size() == 1; }));
  EXPECT_EQ(OnLoop([&] { return sink_->held.front().payloads.front(); }), "20");
}

// Out of descriptors, the queue's segment cannot be opened when the records arrive: the runner
// takes again on its own (kReadRetry), with no later append to wake it.
TEST_F(SinkRunnerTest, RecordsThatCouldNotBeReadAreTakenAgainWithoutAnotherAppend) {
  Start(Policy(1));
  files_->FailNext(testing::FaultFileSystem::Op::kOpen, EMFILE, 1, "/queue/0");  // a segment
  Append(2);
  ASSERT_TRUE(WaitFor([&] { return sink_->held.size() == 1; }));
  EXPECT_EQ(OnLoop([&] { return sink_->AnswerOldest(AttemptOutcome::Delivered()); }),
            (std::vector<std::string>{"0", "1"}));
  EXPECT_EQ(
      metrics_.GetCounter("seedance_queue_read_errors_total", "", {{"component", "held"}}).Value(),
      1u);
}

TEST_F(SinkRunnerTest, ARetryAfterLongerThanRetryMaxWaitsOnlyRetryMax) {
  DeliveryPolicy policy = Policy(1);
  policy.retry_max = milliseconds(20);
  Start(policy);
  Append(1);
  ASSERT_TRUE(WaitFor([&] { return sink_->held.size() == 1; }));
  const auto t0 = std::chrono::steady_clock::now();
  OnLoop([&] {
    sink_->AnswerOldest(AttemptOutcome::Retry("HTTP 429", milliseconds(3600 * 1000), true));
    return 0;
  });
  ASSERT_TRUE(WaitFor([&] { return sink_->held.size() == 1; }));
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(2));
  EXPECT_EQ(stats_.retries.Value(), 1u);
}

TEST_F(SinkRunnerTest, GivesUpAfterRetryLimitRetriesWithTheReason) {
  DeliveryPolicy policy = Policy(1);
  policy.retry_limit = 2;
  Start(policy);
  Append(3);
  for (int i = 0; i < 3; ++i) {  // the first attempt and two retries
    ASSERT_TRUE(WaitFor([&] { return sink_->held.size() == 1; }));
    OnLoop([&] {
      sink_->AnswerOldest(AttemptOutcome::Retry("HTTP 503"));
      return 0;
    });
  }
  ASSERT_TRUE(WaitFor([&] { return rejected_.size() == 3; }));
  EXPECT_EQ(OnLoop([&] { return rejected_[0].second; }), "gave up after 3 attempts: HTTP 503");
  EXPECT_EQ(OnLoop([&] { return sink_->attempts; }), 3);
}

TEST_F(SinkRunnerTest, TooLargeIsHalvedDownToSingleEventsAndTheseAreRejected) {
  Start(Policy(1, 4));
  Append(4);
  ASSERT_TRUE(WaitFor([&] { return sink_->held.size() == 1; }));
  OnLoop([&] {
    sink_->AnswerOldest(AttemptOutcome::TooLarge("HTTP 413"));  // [0 1 2 3]
    return 0;
  });
  // Both halves are attempted at once, within the one batch.
  ASSERT_TRUE(WaitFor([&] { return sink_->held.size() == 2; }));
  OnLoop([&] {
    EXPECT_EQ(sink_->AnswerOldest(AttemptOutcome::Delivered()),
              (std::vector<std::string>{"0", "1"}));
    EXPECT_EQ(sink_->AnswerOldest(AttemptOutcome::TooLarge("HTTP 413")),
              (std::vector<std::string>{"2", "3"}));
    return 0;
  });
  ASSERT_TRUE(WaitFor([&] { return sink_->held.size() == 2; }));
  OnLoop([&] {
    sink_->AnswerOldest(AttemptOutcome::Delivered());           // 2
    sink_->AnswerOldest(AttemptOutcome::TooLarge("HTTP 413"));  // 3: alone, still too large
    return 0;
  });
  ASSERT_TRUE(WaitFor([&] { return runner_->Pending() == 0; }));
  ASSERT_EQ(OnLoop([&] { return rejected_.size(); }), 1u);
  EXPECT_EQ(OnLoop([&] { return rejected_[0]; }),
            std::make_pair(std::string("3"), std::string("HTTP 413")));
  EXPECT_EQ(stats_.events_out.Value(), 3u);
  EXPECT_EQ(stats_.BatchLatency().Count(), 1u);  // one outcome for the one batch
}

TEST_F(SinkRunnerTest, AnAttemptPastTheTimeoutIsAbortedAndItsFailureRetried) {
  DeliveryPolicy policy = Policy(1);
  policy.timeout = milliseconds(30);
  Start(policy);
  Append(1);
  ASSERT_TRUE(WaitFor([&] { return sink_->aborted.size() == 1; }));
  OnLoop([&] {
    sink_->AnswerOldest(AttemptOutcome::Retry("connection closed"));  // what Abort() causes
    return 0;
  });
  ASSERT_TRUE(WaitFor([&] { return sink_->attempts == 2; }));
  EXPECT_EQ(stats_.retries.Value(), 1u);
  OnLoop([&] {
    sink_->AnswerOldest(AttemptOutcome::Delivered());
    return 0;
  });
  ASSERT_TRUE(WaitFor([&] { return runner_->Pending() == 0; }));
  EXPECT_EQ(stats_.events_out.Value(), 1u);
}

// docs/http-sink.md: "an attempt times out at most 10% late" (the watchdog looks every tenth of
// the timeout). Never early; late by at most a tenth, plus 50 ms for this machine's scheduling.
// "Early" is measured from the runner's stamp, taken just before it hands the attempt over; the
// fake sink stamps it on arrival, a little later (microseconds; under ASan it once measured
// 76 µs, when the stamp came before the runner's bookkeeping), so its clock may see the abort
// up to that hand-over early: 1 ms is allowed for it.
TEST_F(SinkRunnerTest, AnAttemptIsAbortedAtItsTimeoutAtMostATenthLate) {
  DeliveryPolicy policy = Policy(1);
  policy.timeout = milliseconds(400);
  policy.retry_initial = milliseconds(1);
  Start(policy);
  Append(1);
  for (int round = 0; round < 3; ++round) {
    ASSERT_TRUE(WaitFor([&] { return static_cast<int>(sink_->aborted.size()) == round + 1; }));
    const auto late = OnLoop([&] { return sink_->aborted_at.back() - sink_->started_at.back(); });
    EXPECT_GE(late, milliseconds(400) - milliseconds(1)) << "round " << round;
    EXPECT_LE(late, milliseconds(400 + 40 + 50)) << "round " << round;
    OnLoop([&] {
      sink_->AnswerOldest(AttemptOutcome::Retry("aborted"));  // what Abort() causes
      return 0;
    });
  }
}

// batch_linger: a batch smaller than batch_size waits for more until its oldest event has
// waited the linger; a full batch and anything after the shutdown deadline leave at once.
TEST_F(SinkRunnerTest, ASmallBatchLingersForMoreAndAFullOneLeavesAtOnce) {
  DeliveryPolicy policy = Policy(1, /*batch=*/10);
  policy.linger = milliseconds(300);
  Start(policy);
  const auto t0 = std::chrono::steady_clock::now();
  Append(3);
  std::this_thread::sleep_for(milliseconds(100));
  EXPECT_EQ(OnLoop([&] { return sink_->attempts; }), 0);  // still lingering
  Append(2);                                              // joins the waiting batch
  ASSERT_TRUE(WaitFor([&] { return sink_->attempts == 1; }));
  const auto waited = OnLoop([&] { return sink_->started_at.back(); }) - t0;
  EXPECT_GE(waited, milliseconds(290));
  EXPECT_LE(waited, milliseconds(300 + 150));
  EXPECT_EQ(OnLoop([&] { return sink_->AnswerOldest(AttemptOutcome::Delivered()).size(); }), 5u);

  const auto t1 = std::chrono::steady_clock::now();
  Append(10);  // a full batch: no waiting
  ASSERT_TRUE(WaitFor([&] { return sink_->attempts == 2; }));
  EXPECT_LT(OnLoop([&] { return sink_->started_at.back(); }) - t1, milliseconds(150));
  EXPECT_EQ(OnLoop([&] { return sink_->AnswerOldest(AttemptOutcome::Delivered()).size(); }), 10u);

  runner_->SetShutdownDeadline(std::chrono::steady_clock::now() + std::chrono::seconds(5));
  const auto t2 = std::chrono::steady_clock::now();
  Append(1);  // shutting down: what is left leaves at once
  ASSERT_TRUE(WaitFor([&] { return sink_->attempts == 3; }));
  EXPECT_LT(OnLoop([&] { return sink_->started_at.back(); }) - t2, milliseconds(150));
  OnLoop([&] { return sink_->AnswerOldest(AttemptOutcome::Delivered()).size(); });
}

// batch_linger counts from an event's arrival (NoteArrival: when Seedance took it in), so
// time spent before the sink is part of it.
TEST_F(SinkRunnerTest, TheLingerCountsFromTheOldestArrival) {
  DeliveryPolicy policy = Policy(1, /*batch=*/10);
  policy.linger = milliseconds(300);
  Start(policy);
  const auto t0 = std::chrono::steady_clock::now();
  runner_->NoteArrival(util::WallNowNs() - 250'000'000);  // taken in 250 ms ago
  Append(2);
  ASSERT_TRUE(WaitFor([&] { return sink_->attempts == 1; }));
  const auto waited = OnLoop([&] { return sink_->started_at.back(); }) - t0;
  EXPECT_GE(waited, milliseconds(40));
  EXPECT_LE(waited, milliseconds(50 + 150)) << "it waited the whole linger again";
  EXPECT_EQ(OnLoop([&] { return sink_->AnswerOldest(AttemptOutcome::Delivered()).size(); }), 2u);
}

// Events that wait behind a full concurrency limit are lingering already: once a slot is free
// after more than the linger, their batch leaves at once.
TEST_F(SinkRunnerTest, WaitingForASlotCountsAsLingering) {
  DeliveryPolicy policy = Policy(1, /*batch=*/10);
  policy.linger = milliseconds(300);
  Start(policy);
  Append(10);  // a full batch takes the only slot
  ASSERT_TRUE(WaitFor([&] { return sink_->attempts == 1; }));
  Append(3);
  std::this_thread::sleep_for(milliseconds(350));  // longer than the linger, slot still taken
  EXPECT_EQ(OnLoop([&] { return sink_->attempts; }), 1);
  const auto t1 = std::chrono::steady_clock::now();
  EXPECT_EQ(OnLoop([&] { return sink_->AnswerOldest(AttemptOutcome::Delivered()).size(); }), 10u);
  ASSERT_TRUE(WaitFor([&] { return sink_->attempts == 2; }));
  EXPECT_LT(OnLoop([&] { return sink_->started_at.back(); }) - t1, milliseconds(150));
  EXPECT_EQ(OnLoop([&] { return sink_->AnswerOldest(AttemptOutcome::Delivered()).size(); }), 3u);
}

// Memory mode: the processing thread collects its sink kicks for the end of its batch
// (util::WakeBatcher). A push that must wait for room sends them first: otherwise an idle sink
// would never be kicked and the push would wait until its deadline.
TEST_F(SinkRunnerTest, APushThatWaitsForRoomKicksTheSinkFirst) {
  auto sink = std::make_unique<HoldingSink>();
  sink_ = sink.get();
  runner_ = std::make_unique<SinkRunner>(
      "held", std::move(sink), Policy(1, /*batch=*/4), /*capacity=*/4, loop_, stats_,
      [](Event&&, const std::string&) {}, /*cursor=*/nullptr);
  loop_.Start();
  util::WakeBatcher batcher(loop_.io());
  const auto t0 = std::chrono::steady_clock::now();
  std::thread processing([&] {
    util::WakeBatcher::Scope scope(&batcher);
    for (int i = 0; i < 8; ++i) {  // 4 fill the queue; the 5th waits for the sink to take them
      Event e;
      e.payload = std::to_string(i);
      runner_->Push(std::move(e), t0 + std::chrono::seconds(5));
    }
  });
  processing.join();
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(2))
      << "the push waited for its deadline: the sink was never kicked";
  ASSERT_TRUE(WaitFor([&] { return sink_->attempts == 1; }));
  EXPECT_EQ(OnLoop([&] { return sink_->AnswerOldest(AttemptOutcome::Delivered()).size(); }), 4u);
  ASSERT_TRUE(WaitFor([&] { return sink_->attempts == 2; }));
  EXPECT_EQ(OnLoop([&] { return sink_->AnswerOldest(AttemptOutcome::Delivered()).size(); }), 4u);
}

// Standard error into a file for the test's duration (the log writes there).
class StderrCapture {
 public:
  StderrCapture() : path_(fs::temp_directory_path() / ("stderr_" + std::to_string(::getpid()))) {
    std::fflush(stderr);
    saved_ = ::dup(STDERR_FILENO);
    const int fd = ::open(path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    ::dup2(fd, STDERR_FILENO);
    ::close(fd);
  }
  ~StderrCapture() {
    std::fflush(stderr);
    ::dup2(saved_, STDERR_FILENO);
    ::close(saved_);
    fs::remove(path_);
  }
  // Lines that contain `needle`.
  int Count(const std::string& needle) const {
    std::fflush(stderr);
    std::ifstream in(path_);
    int n = 0;
    for (std::string line; std::getline(in, line);) n += line.find(needle) != std::string::npos;
    return n;
  }

 private:
  fs::path path_;
  int saved_ = -1;
};

TEST_F(SinkRunnerTest, AFailingSinkIsLoggedOnceNotOnEveryRetryAndOnceWhenItRecovers) {
  StderrCapture log;
  Start(Policy(1));
  Append(1);
  for (int i = 0; i < 50; ++i) {  // 50 failures within well under the 10 s between lines
    ASSERT_TRUE(WaitFor([&] { return !sink_->held.empty(); }));
    OnLoop([&] {
      sink_->AnswerOldest(AttemptOutcome::Retry("503 Service Unavailable"));
      return 0;
    });
  }
  ASSERT_TRUE(WaitFor([&] { return !sink_->held.empty(); }));
  OnLoop([&] {
    sink_->AnswerOldest(AttemptOutcome::Delivered());
    return 0;
  });
  ASSERT_TRUE(WaitFor([&] { return runner_->Pending() == 0; }));
  EXPECT_EQ(stats_.retries.Value(), 50u);
  EXPECT_EQ(log.Count("delivery failed: 503 Service Unavailable; retrying in"), 1);
  EXPECT_EQ(log.Count("delivery recovered"), 1);
}

TEST_F(SinkRunnerTest, ASecondAnswerToOneAttemptIsIgnored) {
  Start(Policy(1));
  Append(2);
  ASSERT_TRUE(WaitFor([&] { return sink_->held.size() == 1; }));
  OnLoop([&] {
    AttemptCallback done = sink_->held[0].done;
    sink_->AnswerOldest(AttemptOutcome::Delivered());
    done(AttemptOutcome::Rejected("late duplicate answer"));
    return 0;
  });
  ASSERT_TRUE(WaitFor([&] { return runner_->Pending() == 0; }));
  EXPECT_EQ(stats_.events_out.Value(), 2u);
  EXPECT_TRUE(OnLoop([&] { return rejected_.empty(); }));
}

TEST_F(SinkRunnerTest, StopEndsWaitingRetriesAsShutdownNotRejected) {
  DeliveryPolicy policy = Policy(1);
  policy.retry_initial = policy.retry_max = milliseconds(3600 * 1000);
  Start(policy);
  Append(5);
  ASSERT_TRUE(WaitFor([&] { return sink_->held.size() == 1; }));
  OnLoop([&] {
    sink_->AnswerOldest(AttemptOutcome::Retry("busy"));
    runner_->Stop();
    return 0;
  });
  EXPECT_EQ(stats_.events_out.Value(), 0u);
  EXPECT_TRUE(OnLoop([&] { return rejected_.empty(); }));
  // Still in the durable queue: tests/conformance restarts and finds them delivered then.
}

}  // namespace
}  // namespace seedance
