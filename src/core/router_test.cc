// Router: which sinks get which output, in memory and durable mode; side-output headers;
// outputs nobody consumes; the rejected path does not loop.
#include "core/router.h"

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>

namespace seedance {
namespace {

namespace fs = std::filesystem;

class NullSink : public Sink {
 public:
  void Attempt(uint64_t, const Batch&, AttemptCallback done) override {
    done(AttemptOutcome::Delivered());
  }
};

class RouterTest : public ::testing::Test {
 protected:
  // A memory-mode runner whose loop never runs: what is routed to it stays queued.
  std::unique_ptr<SinkRunner> Runner(const std::string& name) {
    stats_.push_back(std::make_unique<ComponentStats>(metrics_, "sink", name));
    return std::make_unique<SinkRunner>(name, std::make_unique<NullSink>(), DeliveryPolicy{}, 100,
                                        loop_, *stats_.back(), [](Event&&, const std::string&) {});
  }
  uint64_t Routed(Output o) {
    return metrics_
        .GetCounter("seedance_output_events_total", "", {{"output", std::string(OutputName(o))}})
        .Value();
  }
  static Event Ev(int id) {
    Event e;
    e.id = static_cast<uint64_t>(id);
    e.topic = "t";
    e.payload = "{}";
    return e;
  }

  observe::MetricsRegistry metrics_;
  EventLoop loop_;
  std::vector<std::unique_ptr<ComponentStats>> stats_;
  const Router::Deadline kNoWait = Router::Deadline::max();
};

TEST_F(RouterTest, MemoryModeCopiesEachEventToEveryConsumerOfItsOutput) {
  auto a = Runner("a");
  auto b = Runner("b");
  Router router(nullptr, metrics_);
  router.AddSink(a.get(), {Output::kMain});
  router.AddSink(b.get(), {Output::kMain, Output::kError});
  EXPECT_TRUE(router.Route(Output::kMain, Ev(1), false, kNoWait));
  EXPECT_TRUE(router.RouteSide(Output::kError, Ev(2), "bad", false, "lua", kNoWait));
  EXPECT_TRUE(router.Route(Output::kStale, Ev(3), false, kNoWait));  // nobody: dropped
  EXPECT_EQ(a->Pending(), 1u);
  EXPECT_EQ(b->Pending(), 2u);
  EXPECT_EQ(Routed(Output::kMain), 1u);
  EXPECT_EQ(Routed(Output::kError), 1u);
  EXPECT_EQ(Routed(Output::kStale), 1u);  // counted although nobody consumes it
}

// A reload replaces sinks while events flow: each Route() from then on, from the processing
// thread (which keeps its own copy of the routes) or the loop, sees the new set.
TEST_F(RouterTest, SetSinksReplacesTheConsumersForTheNextEventOnEitherThread) {
  auto a = Runner("a");
  auto b = Runner("b");
  Router router(nullptr, metrics_);
  router.AddSink(a.get(), {Output::kMain});
  EXPECT_TRUE(router.Route(Output::kMain, Ev(1), false, kNoWait));
  router.SetSinks({{b.get(), {Output::kMain, Output::kRejected}}});
  EXPECT_TRUE(router.Route(Output::kMain, Ev(2), false, kNoWait));
  EXPECT_TRUE(router.Route(Output::kMain, Ev(3), true, kNoWait));
  EXPECT_EQ(a->Pending(), 1u);
  EXPECT_EQ(b->Pending(), 2u);
  router.SetSinks({});
  EXPECT_TRUE(router.Route(Output::kMain, Ev(4), false, kNoWait));  // nobody: dropped
  EXPECT_EQ(b->Pending(), 2u);
}

TEST_F(RouterTest, MemoryModeGivesEachSinkOnlyTheEventsItsRoutingTakes) {
  auto alerts = Runner("alerts");
  auto normal = Runner("normal");
  auto site = Runner("site");
  alerts->SetRouting({.by_output = true, .outputs = {"alerts"}});
  normal->SetRouting({.by_output = true, .outputs = {"main"}});
  site->SetRouting({.topics = {"site/#"}, .by_output = true, .outputs = {"main", "alerts"}});
  Router router(nullptr, metrics_);
  for (SinkRunner* r : {alerts.get(), normal.get(), site.get()}) router.AddSink(r, {Output::kMain});
  Event alert = Ev(1);
  alert.SetHeader("output", "alerts");
  EXPECT_TRUE(router.Route(Output::kMain, std::move(alert), false, kNoWait));
  Event plain = Ev(2);
  plain.topic = "site/4";
  EXPECT_TRUE(router.Route(Output::kMain, std::move(plain), false, kNoWait));
  // The labelled event was moved to "alerts", which comes first: the sinks after it must not
  // take what is left of it for an unlabelled event.
  EXPECT_EQ(alerts->Pending(), 1u);
  EXPECT_EQ(normal->Pending(), 1u);
  EXPECT_EQ(site->Pending(), 1u);
}

TEST_F(RouterTest, DurableModeWritesOneRecordWithItsOutputAndTheSideHeaders) {
  storage::QueueConfig config;
  config.data_dir =
      (fs::temp_directory_path() / ("router_test_" + std::to_string(::getpid()))).string();
  fs::remove_all(config.data_dir);
  {
    auto queue = storage::DurableQueue::Open(config, metrics_);
    ASSERT_TRUE(queue.has_value());
    auto consumer = Runner("c");
    Router router(queue->get(), metrics_);
    router.AddSink(consumer.get(), {Output::kMain, Output::kError});
    ASSERT_TRUE(router.Route(Output::kMain, Ev(1), false, kNoWait));
    ASSERT_TRUE(
        router.RouteSide(Output::kError, Ev(2), "line one\nline two", false, "lua", kNoWait));
    ASSERT_TRUE((*queue)->Commit().ok());
    EXPECT_EQ(consumer->Pending(), 0u);  // nothing copied into the runner: it reads the queue

    auto errors = (*queue)->OpenCursor("errors-only", {Output::kError});
    std::vector<Event> events;
    uint64_t first = 0, last = 0;
    ASSERT_TRUE(errors->Read(10, &events, &first, &last));
    ASSERT_EQ(events.size(), 1u);
    EXPECT_EQ(events[0].id, 2u);
    EXPECT_EQ(*events[0].FindHeader("output"), "error");
    EXPECT_EQ(*events[0].FindHeader("component"), "lua");
    const std::string reason = *events[0].FindHeader("reason");
    EXPECT_EQ(reason.find('\n'), std::string::npos) << reason;  // one line
  }
  fs::remove_all(config.data_dir);
}

TEST_F(RouterTest, AnEventRefusedOnTheRejectedPathIsCountedNotRoutedAgain) {
  auto r = Runner("r");
  Router router(nullptr, metrics_);
  router.AddSink(r.get(), {Output::kRejected});
  router.RouteRejected(Ev(1), "HTTP 400", "http");  // first refusal: to rejected
  EXPECT_EQ(r->Pending(), 1u);
  Event again = Ev(2);
  again.SetHeader("output", "rejected");
  router.RouteRejected(std::move(again), "HTTP 400", "http");  // refused on the rejected path
  EXPECT_EQ(r->Pending(), 1u);
  EXPECT_EQ(Routed(Output::kRejected), 1u);
  EXPECT_EQ(metrics_
                .GetCounter("seedance_events_dropped_total", "",
                            {{"component", "http"}, {"kind", "sink"}, {"reason", "rejected_twice"}})
                .Value(),
            1u);
}

// Side-output lines are rate-limited by the kind of reason, not its bytes: line numbers and
// offsets do not make a new kind (before, 2,000 invalid lines of a file wrote 2,000 log
// lines), and reasons that differ in their text write a bounded number of lines.
TEST_F(RouterTest, SideOutputLinesAreLimitedByKindOfReasonWhateverTheNumbersInIt) {
  Router router(nullptr, metrics_);  // no consumer: counted and dropped, still logged
  auto lines_of = [](const std::string& log) {
    return static_cast<size_t>(std::count(log.begin(), log.end(), '\n'));
  };
  ::testing::internal::CaptureStderr();
  for (int i = 1; i <= 2000; ++i) {
    ASSERT_TRUE(router.RouteSide(Output::kError, Ev(i),
                                 fmt::format("line {} of /var/log/app.log: invalid JSON at offset "
                                             "{}: Invalid value.",
                                             i * 7919, i % 977),
                                 false, "tail", kNoWait));
  }
  const std::string numbered = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(lines_of(numbered), 1u) << numbered.substr(0, 2000);
  EXPECT_NE(numbered.find("line 7919 of /var/log/app.log"), std::string::npos);

  ::testing::internal::CaptureStderr();
  for (int i = 0; i < 2000; ++i) {  // a script's error quoting each payload's field name
    std::string field;
    for (int n = i; n > 0 || field.empty(); n /= 26)
      field.push_back(static_cast<char>('a' + n % 26));
    ASSERT_TRUE(router.RouteSide(Output::kError, Ev(i),
                                 "attempt to index a nil value (field '" + field + "')", false,
                                 "lua", kNoWait));
  }
  const std::string distinct = ::testing::internal::GetCapturedStderr();
  EXPECT_LE(lines_of(distinct), util::LogLimiter::kMaxKeys + 1);
  EXPECT_EQ(Routed(Output::kError), 4000u);  // every event counted
}

}  // namespace
}  // namespace seedance
