#include "sources/generate/generate_source.h"

#include <boost/asio/steady_timer.hpp>

#include "observe/component_stats.h"
#include "seedance/options.h"
#include "seedance/plugin_context.h"
#include "util/event_loop.h"
#include "util/strings.h"

namespace seedance::sources {
namespace {

class GenerateSource final : public Source {
 public:
  GenerateSource(std::string payload, std::string topic, int64_t count, double rate,
                 std::chrono::nanoseconds delay, PayloadFormat format, PluginContext ctx)
      : payload_(std::move(payload)),
        topic_(std::move(topic)),
        count_(count),
        rate_(rate),
        delay_(delay),
        format_(format),
        ctx_(std::move(ctx)),
        timer_(ctx_.loop->io()) {}

  Status Start(SourceOutput& output) override {
    output_ = &output;
    start_ = std::chrono::steady_clock::now() + delay_;
    if (delay_.count() > 0) {
      timer_.expires_at(start_);
      timer_.async_wait([this](boost::system::error_code ec) {
        if (!ec) Produce();
      });
    } else {
      Produce();
    }
    return Status::Ok();
  }
  void Stop() override {
    stopped_ = true;
    timer_.cancel();
  }

 private:
  void Produce() {
    while (!stopped_ && (count_ == 0 || sent_ < count_)) {
      if (rate_ > 0) {
        auto due = start_ + std::chrono::nanoseconds(static_cast<int64_t>(sent_ * 1e9 / rate_));
        if (due > std::chrono::steady_clock::now()) {
          timer_.expires_at(due);
          timer_.async_wait([this](boost::system::error_code ec) {
            if (!ec) Produce();
          });
          return;
        }
      }
      Event e;
      e.source = ctx_.name;
      e.topic = topic_;
      e.format = format_;
      e.ingest_time_ns = e.event_time_ns = ctx_.now_ns();
      e.payload = payload_;
      util::ReplaceAll(e.payload, "{n}", std::to_string(sent_));
      util::ReplaceAll(e.payload, "{now_ns}", std::to_string(e.ingest_time_ns));
      if (!output_->TryEmit(e, AckHandle{})) {
        output_->WhenWritable([this] { Produce(); });
        return;
      }
      ctx_.stats->events_in.Add();
      ctx_.stats->events_out.Add();
      ++sent_;
      if (rate_ <= 0 && sent_ % 1024 == 0) {  // yield to the rest of the loop now and then
        ctx_.loop->Post([this] { Produce(); });
        return;
      }
    }
  }

  std::string payload_;
  std::string topic_;
  int64_t count_;
  double rate_;
  std::chrono::nanoseconds delay_;
  PayloadFormat format_;
  PluginContext ctx_;
  boost::asio::steady_timer timer_;
  SourceOutput* output_ = nullptr;
  std::chrono::steady_clock::time_point start_;
  int64_t sent_ = 0;
  bool stopped_ = false;
};

}  // namespace

namespace {

struct GenerateSettings {
  std::string payload;
  std::string topic;
  int64_t count = 0;
  double rate = 1;
  std::chrono::nanoseconds delay{0};
  PayloadFormat format = PayloadFormat::kJson;
};

const Options<GenerateSettings>& GenerateSchema() {
  using S = GenerateSettings;
  static const Options<S> o =
      Options<S>()
          .Add(&S::payload, {.name = "payload",
                             .doc = "payload of each event; {n} becomes the sequence number, "
                                    "{now_ns} the Unix time in ns",
                             .default_value = "{\"seq\":{n},\"temperature\":21.5}"})
          .Add(&S::topic,
               {.name = "topic", .doc = "topic of each event", .default_value = "generated"})
          .Int(&S::count,
               {.name = "count", .doc = "events to emit (0 = no end)", .default_value = "0"})
          .Add(&S::rate, {.name = "rate",
                          .doc = "events per second (0 = as fast as possible)",
                          .default_value = "1"})
          .Add(&S::delay, {.name = "delay",
                           .doc = "wait this long after start before the first event",
                           .default_value = "0s"})
          .Enum(&S::format, {.name = "format", .doc = "json or raw", .default_value = "json"},
                {{"json", PayloadFormat::kJson}, {"raw", PayloadFormat::kRaw}});
  return o;
}

}  // namespace

SourceFactory GenerateSourceFactory() {
  SourceFactory f;
  f.info.type = "generate";
  f.info.kind = PluginKind::kSource;
  f.info.summary = "Emits a fixed payload at a given rate (demos, benchmarks).";
  f.info.params = GenerateSchema().Specs();
  f.create = [](const Params& p, PluginContext& ctx) -> Result<std::unique_ptr<Source>> {
    SEEDANCE_ASSIGN_OR_RETURN(GenerateSettings s, GenerateSchema().Bind(p));
    return std::unique_ptr<Source>(
        new GenerateSource(s.payload, s.topic, s.count, s.rate, s.delay, s.format, ctx));
  };
  return f;
}

}  // namespace seedance::sources
