// ProcessingLoop: processors in order, JSON checked, side outputs routed, acknowledgements
// only once the batch is in the durable queue, none when it cannot be made safe, ticks and
// watermarks reach every stage.
#include "core/processing_loop.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>
#include <set>

#include "testing/fault_file_system.h"

namespace seedance {
namespace {

namespace fs = std::filesystem;

// Appends its tag to each event's topic; records what it saw.
class Tagger : public Processor {
 public:
  explicit Tagger(std::string tag) : tag_(std::move(tag)) {}
  void Process(Event&& event, ProcessorOutput& out) override {
    seen.push_back(event.topic);
    if (event.topic == "stale") {
      out.EmitSide(Output::kStale, std::move(event), "too old");
      return;
    }
    event.topic += tag_;
    out.Emit(std::move(event));
  }
  void OnWatermark(std::string_view scope, int64_t ns, ProcessorOutput& out) override {
    watermarks.push_back(ns);
    out.EmitWatermark(scope, ns);
  }
  void Tick(int64_t, ProcessorOutput& out) override {
    ++ticks;
    if (announce_watermark) out.EmitWatermark("", 42);
  }
  std::vector<std::string> seen;
  std::vector<int64_t> watermarks;
  int ticks = 0;
  bool announce_watermark = false;

 private:
  std::string tag_;
};

class NullSink : public Sink {
 public:
  void Attempt(uint64_t, const Batch&, AttemptCallback done) override {
    done(AttemptOutcome::Delivered());
  }
};

// Records acknowledged tokens and, at each, how many commits the durable queue had made.
class CommitRecorder : public Acknowledger {
 public:
  void Acknowledge(uint64_t token) override {
    acked.insert(token);
    commits_at_ack.push_back(commits);
  }
  int commits = 0;
  std::set<uint64_t> acked;
  std::vector<int> commits_at_ack;
};

class ProcessingLoopTest : public ::testing::Test {
 protected:
  ProcessingLoopTest()
      : dir_((fs::temp_directory_path() / ("processing_loop_test_" + std::to_string(::getpid())))
                 .string()),
        fault_fs_(dir_) {
    fs::remove_all(dir_);
    config_.data_dir = dir_;
  }
  ~ProcessingLoopTest() override { fs::remove_all(dir_); }

  void OpenQueue() {
    auto q = storage::DurableQueue::Open(config_, metrics_, fault_fs_);
    ASSERT_TRUE(q.has_value()) << q.error().message();
    queue_ = std::move(q).value();
    queue_->SetCommitListener([this] { ++recorder_.commits; });
    router_ = std::make_unique<Router>(queue_.get(), metrics_);
    // A consumer of every output (its loop never runs: it only makes the router keep them).
    sink_stats_ = std::make_unique<ComponentStats>(metrics_, "sink", "consumer");
    consumer_ =
        std::make_unique<SinkRunner>("consumer", std::make_unique<NullSink>(), DeliveryPolicy{},
                                     100, loop_, *sink_stats_, [](Event&&, const std::string&) {});
    router_->AddSink(consumer_.get(), {Output::kMain, Output::kError, Output::kStale});
  }

  void Push(const std::string& topic, const std::string& payload, uint64_t token,
            PayloadFormat format = PayloadFormat::kJson, std::string_view invalid = {}) {
    Event e;
    e.id = token;
    e.source = "src";
    e.topic = topic;
    e.payload = payload;
    e.format = format;
    ASSERT_TRUE(ingest_.TryPush(e, AckHandle{&recorder_, token}, invalid));
  }

  ProcessingLoop::Parts Parts() {
    ProcessingLoop::Parts parts{.ingest = &ingest_, .router = router_.get(), .queue = queue_.get()};
    for (size_t i = 0; i < taggers_.size(); ++i) {
      stats_.push_back(
          std::make_unique<ComponentStats>(metrics_, "processor", "p" + std::to_string(i)));
      parts.stages.push_back({"p" + std::to_string(i), stats_.back().get(), taggers_[i].get()});
    }
    parts.on_invalid_json = [this](const std::string& source) { invalid_from_.push_back(source); };
    return parts;
  }

  // Every record of `output` in the queue.
  std::vector<Event> Records(Output output) {
    auto cursor = queue_->OpenCursor("reader_" + std::string(OutputName(output)), {output});
    std::vector<Event> all, events;
    uint64_t first = 0, last = 0;
    while (cursor->Read(100, &events, &first, &last)) {
      for (auto& e : events) all.push_back(std::move(e));
    }
    return all;
  }

  std::string dir_;
  testing::FaultFileSystem fault_fs_;
  storage::QueueConfig config_;
  observe::MetricsRegistry metrics_;
  EventLoop loop_;  // never run: nothing here waits for room
  IngestQueue ingest_{100, loop_};
  std::unique_ptr<storage::DurableQueue> queue_;
  std::unique_ptr<Router> router_;
  std::unique_ptr<ComponentStats> sink_stats_;
  std::unique_ptr<SinkRunner> consumer_;
  CommitRecorder recorder_;
  std::vector<std::unique_ptr<Tagger>> taggers_;
  std::vector<std::unique_ptr<ComponentStats>> stats_;
  std::vector<std::string> invalid_from_;
};

TEST_F(ProcessingLoopTest, RunsProcessorsInOrderAndAcknowledgesOnlyCommittedBatches) {
  OpenQueue();
  taggers_.push_back(std::make_unique<Tagger>("-a"));
  taggers_.push_back(std::make_unique<Tagger>("-b"));
  for (uint64_t i = 1; i <= 3; ++i) Push("t", "{\"n\":" + std::to_string(i) + "}", i);
  ingest_.Close();
  ProcessingLoop loop(Parts());
  loop.Run();

  EXPECT_EQ(taggers_[0]->seen, (std::vector<std::string>{"t", "t", "t"}));
  EXPECT_EQ(taggers_[1]->seen, (std::vector<std::string>{"t-a", "t-a", "t-a"}));
  const auto main = Records(Output::kMain);
  ASSERT_EQ(main.size(), 3u);
  EXPECT_EQ(main[0].topic, "t-a-b");
  EXPECT_EQ(main[2].payload, "{\"n\":3}");
  EXPECT_EQ(recorder_.acked, (std::set<uint64_t>{1, 2, 3}));
  ASSERT_EQ(recorder_.commits_at_ack.size(), 3u);
  for (int commits : recorder_.commits_at_ack) EXPECT_GE(commits, 1);  // after the commit
  EXPECT_EQ(stats_[0]->events_in.Value(), 3u);
  EXPECT_EQ(stats_[1]->events_out.Value(), 3u);
}

TEST_F(ProcessingLoopTest, InvalidJsonAndRefusedInputsGoToErrorWithTheirReason) {
  OpenQueue();
  Push("t", "{not json", 1);
  Push("t", "{not json but raw", 2, PayloadFormat::kRaw);  // raw: not checked
  Push("t", "", 3, PayloadFormat::kRaw, "packet over max_packet_size");
  ingest_.Close();
  ProcessingLoop loop(Parts());
  loop.Run();

  const auto errors = Records(Output::kError);
  ASSERT_EQ(errors.size(), 2u);
  EXPECT_EQ(errors[0].format, PayloadFormat::kRaw);  // sinks must quote it
  EXPECT_FALSE(errors[0].FindHeader("reason")->empty());
  EXPECT_EQ(*errors[1].FindHeader("reason"), "packet over max_packet_size");
  EXPECT_EQ(*errors[1].FindHeader("component"), "src");
  EXPECT_EQ(Records(Output::kMain).size(), 1u);
  EXPECT_EQ(invalid_from_, std::vector<std::string>{"src"});  // counted once, for its source
  EXPECT_EQ(recorder_.acked, (std::set<uint64_t>{1, 2, 3}));  // routed safely: acknowledged
}

TEST_F(ProcessingLoopTest, AProcessorsSideOutputIsRoutedWithItsReasonAndCounted) {
  OpenQueue();
  taggers_.push_back(std::make_unique<Tagger>("-a"));
  Push("stale", "{}", 1);
  ingest_.Close();
  ProcessingLoop loop(Parts());
  loop.Run();
  const auto stale = Records(Output::kStale);
  ASSERT_EQ(stale.size(), 1u);
  EXPECT_EQ(*stale[0].FindHeader("reason"), "too old");
  EXPECT_EQ(*stale[0].FindHeader("component"), "p0");
  EXPECT_TRUE(Records(Output::kMain).empty());
}

TEST_F(ProcessingLoopTest, ABatchThatCannotBeCommittedIsNotAcknowledged) {
  OpenQueue();
  Push("t", "{}", 1);
  ingest_.Close();
  fault_fs_.FailNext(testing::FaultFileSystem::Op::kWrite, EIO, 1000);
  ProcessingLoop loop(Parts());
  loop.SetShutdownDeadline(std::chrono::steady_clock::now());  // no retries left
  loop.Run();
  EXPECT_TRUE(recorder_.acked.empty());
}

TEST_F(ProcessingLoopTest, TicksAndWatermarksReachEveryStage) {
  OpenQueue();
  taggers_.push_back(std::make_unique<Tagger>("-a"));
  taggers_.push_back(std::make_unique<Tagger>("-b"));
  taggers_[0]->announce_watermark = true;
  ingest_.Close();
  ProcessingLoop loop(Parts());
  loop.Run();
  EXPECT_EQ(taggers_[0]->ticks, 1);
  EXPECT_EQ(taggers_[1]->ticks, 1);
  EXPECT_TRUE(taggers_[0]->watermarks.empty());  // its own: announced to later stages only
  EXPECT_EQ(taggers_[1]->watermarks, std::vector<int64_t>{42});
}

}  // namespace
}  // namespace seedance
