#include "pipetest/chain.h"

#include <gtest/gtest.h>

namespace seedance::pipetest {
namespace {

// Records what it hears and answers with the clock: a tick's time, an event's, a watermark.
class Probe final : public Processor {
 public:
  explicit Probe(PluginContext ctx) : ctx_(std::move(ctx)) {}
  void Process(Event&& event, ProcessorOutput& out) override {
    event.SetHeader("seen_at", std::to_string(ctx_.now_ns()));
    if (event.payload == R"("side")") return out.EmitSide(Output::kStale, std::move(event), "why");
    out.Emit(std::move(event));
  }
  void OnWatermark(std::string_view scope, int64_t watermark_ns, ProcessorOutput& out) override {
    Event e;
    e.payload = std::to_string(watermark_ns);
    e.topic = ctx_.name + " heard a watermark";
    out.Emit(std::move(e));
    out.EmitWatermark(scope, watermark_ns);
  }
  void Tick(int64_t now_ns, ProcessorOutput&) override { ticks.push_back(now_ns); }
  static inline std::vector<int64_t> ticks;

 private:
  PluginContext ctx_;
};

class ChainTest : public ::testing::Test {
 protected:
  ChainTest() {
    Probe::ticks.clear();
    ProcessorFactory f;
    f.info.type = "probe";
    f.info.kind = PluginKind::kProcessor;
    f.create = [](const Params&, PluginContext& ctx) -> Result<std::unique_ptr<Processor>> {
      return std::unique_ptr<Processor>(new Probe(ctx));
    };
    registry_.Add(std::move(f));
    for (const char* name : {"p1", "p2"}) {
      config::ComponentConfig c;
      c.kind = PluginKind::kProcessor;
      c.type = "probe";
      c.name = name;
      config_.processors.push_back(c);
    }
    config_.file = "pipeline.yaml";
  }
  PluginRegistry registry_;
  config::PipelineConfig config_;
};

TEST_F(ChainTest, EventsPassEveryStageAndSideOutputsNameTheirStage) {
  auto chain = Chain::Build(config_, {}, registry_, 1000);
  ASSERT_TRUE(chain) << chain.error().message();
  Event e;
  e.payload = R"({"a":1})";
  (*chain)->Feed(std::move(e));
  Event side;
  side.payload = R"("side")";
  (*chain)->Feed(std::move(side));
  Event bad;
  bad.payload = "{not json";
  (*chain)->Feed(std::move(bad));
  auto& out = (*chain)->emitted();
  ASSERT_EQ(out.size(), 3u);
  EXPECT_EQ(out[0].output, "main");
  EXPECT_EQ(*out[0].event.FindHeader("seen_at"), "1000");  // the fake clock
  EXPECT_EQ(out[0].event.ingest_time_ns, 1000);
  EXPECT_EQ(out[1].output, "stale");
  EXPECT_EQ(out[1].component, "p1");
  EXPECT_EQ(out[1].reason, "why");
  EXPECT_EQ(out[2].output, "error");  // checked before the first stage, as in run
  EXPECT_EQ(out[2].event.format, PayloadFormat::kRaw);
}

TEST_F(ChainTest, TheClockTicksEveryStageEach100Ms) {
  auto chain = Chain::Build(config_, {"p2"}, registry_, 0);
  ASSERT_TRUE(chain);
  (*chain)->Advance(250'000'000);
  EXPECT_EQ(Probe::ticks, (std::vector<int64_t>{100'000'000, 200'000'000}));
  EXPECT_EQ((*chain)->now_ns(), 250'000'000);
  (*chain)->Advance(50'000'000);  // the tick at 300 ms is due now
  EXPECT_EQ(Probe::ticks.back(), 300'000'000);
}

TEST_F(ChainTest, AWatermarkReachesEachStageInOrder) {
  auto chain = Chain::Build(config_, {"p2", "p1"}, registry_, 0);
  ASSERT_TRUE(chain);
  (*chain)->Watermark(42);
  auto& out = (*chain)->emitted();
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[0].event.topic, "p2 heard a watermark");  // passed on through p1 to main
  EXPECT_EQ(out[1].event.topic, "p1 heard a watermark");
}

TEST_F(ChainTest, AnUnknownNameIsRefusedWithTheKnownOnes) {
  auto chain = Chain::Build(config_, {"p3"}, registry_, 0);
  ASSERT_FALSE(chain);
  EXPECT_EQ(chain.error().message(), "no processor \"p3\" in pipeline.yaml (it has: p1, p2)");
}

}  // namespace
}  // namespace seedance::pipetest
