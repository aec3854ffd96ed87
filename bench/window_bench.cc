// window_bench: events/s through the watermark and window processors (JSON parse included)
// with many keys, their checkpoint taken after every batch as the pipeline does (serialised,
// not written), and the window state's heap bytes per key (mallinfo2 before/after).
//
//   window_bench KEYS EVENTS
#include <malloc.h>

#include <fmt/format.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <random>
#include <string_view>

#include "config/config.h"
#include "observe/component_stats.h"
#include "observe/metrics.h"
#include "processors/watermark/watermark_processor.h"
#include "processors/window/window_processor.h"
#include "seedance/plugin_context.h"
#include "seedance/plugin_registry.h"
#include "sinks/stdout/stdout_sink.h"
#include "sources/generate/generate_source.h"

using namespace seedance;

namespace {

// Counts what reaches the end of the chain; the window's results are dropped here.
class CountingOutput final : public ProcessorOutput {
 public:
  explicit CountingOutput(Processor* next) : next_(next) {}
  void Emit(Event&& e) override {
    if (next_ != nullptr) {
      CountingOutput end(nullptr);
      end.results_ = results_;
      next_->Process(std::move(e), end);
    } else {
      ++*results_;
    }
  }
  void EmitSide(Output, Event&&, std::string_view) override { ++side_; }
  void EmitWatermark(std::string_view scope, int64_t w) override {
    if (next_ != nullptr) {
      CountingOutput end(nullptr);
      end.results_ = results_;
      next_->OnWatermark(scope, w, end);
    }
  }
  uint64_t* results_ = nullptr;
  uint64_t side_ = 0;

 private:
  Processor* next_;
};

}  // namespace

int main(int argc, char** argv) {
  const int keys = argc > 1 ? std::atoi(argv[1]) : 10000;
  const long events = argc > 2 ? std::atol(argv[2]) : 1'000'000;
  // Only the plugins the job names: the binary then links them alone, not every plugin (its
  // link-time-optimized link took 75 s of the build's 9 minutes with all of them).
  PluginRegistry registry;
  registry.Add(sources::GenerateSourceFactory());
  registry.Add(processors::WatermarkProcessorFactory());
  registry.Add(processors::WindowProcessorFactory());
  registry.Add(sinks::StdoutSinkFactory());
  const std::string yaml = R"(
sources:
  - type: generate
processors:
  - type: watermark
    time_field: ts
    time_format: ms
    max_out_of_order: 1s
    allowed_lateness: 30s
    max_future: 0s  # the clock is frozen at 0 (below): every reading would be "ahead" of it
  - type: window
    size: 10s
    key_field: device
    field: v
    aggregates: [count, sum, min, max, avg, p95]
    allowed_lateness: 30s
sinks:
  - type: stdout
queue:
  buffer: memory
)";
  auto config = config::LoadConfigText(yaml, "window_bench.yaml", registry);
  if (!config) {
    std::fprintf(stderr, "%s\n", config.error().message().c_str());
    return 2;
  }
  observe::MetricsRegistry metrics;
  std::vector<std::unique_ptr<ComponentStats>> stats;
  std::vector<std::unique_ptr<Processor>> procs;
  const size_t heap_before = mallinfo2().uordblks;
  for (const auto& c : config->processors) {
    stats.push_back(std::make_unique<ComponentStats>(metrics, "processor", c.name));
    PluginContext ctx;
    ctx.name = c.name;
    ctx.metrics = &metrics;
    ctx.stats = stats.back().get();
    ctx.now_ns = [] { return int64_t{0}; };  // wall clock frozen: no idle advance, no TTL
    procs.push_back(std::move(registry.FindProcessor(c.type)->create(c.params, ctx)).value());
  }
  uint64_t results = 0;
  CountingOutput out(procs[1].get());
  out.results_ = &results;
  // The pipeline takes the processors' changed state after every batch for the checkpoint.
  constexpr long kBatch = 256;
  uint64_t checkpoint_bytes = 0;
  auto checkpoint = [&] {
    for (auto& p : procs) {
      p->TakeChangedState([&](std::string_view key, std::string_view value) {
        checkpoint_bytes += key.size() + value.size();
      });
    }
  };
  std::mt19937_64 rng(1);
  const int64_t base_ms = 1'795'000'000'000;
  // Each key reports once per second of event time, with up to 500 ms of disorder.
  auto make = [&](long i) {
    const int64_t ts = base_ms + (i / keys) * 1000 + static_cast<int64_t>(rng() % 500);
    return fmt::format(R"({{"device":"d{}","ts":{},"v":{}}})", i % keys, ts,
                       static_cast<double>(rng() % 1000) / 10);
  };
  // Warm-up (not timed): 60 s of event time, past the first windows' end + lateness, so the
  // state is at its steady size.
  long i = 0;
  for (; i < 60L * keys && i < events; ++i) {
    Event e;
    e.payload = make(i);
    procs[0]->Process(std::move(e), out);
    if ((i + 1) % kBatch == 0) checkpoint();
  }
  const size_t heap_after = mallinfo2().uordblks;
  const std::string text = metrics.RenderPrometheus();
  const std::string open_metric = "seedance_window_open{component=\"window\"} ";
  const size_t at = text.find(open_metric);
  const double windows_per_key =
      at == std::string::npos ? 0 : std::atof(text.c_str() + at + open_metric.size()) / keys;
  const auto start = std::chrono::steady_clock::now();
  const long timed_from = i;
  checkpoint_bytes = 0;
  for (; i < events; ++i) {
    Event e;
    e.payload = make(i);
    procs[0]->Process(std::move(e), out);
    if ((i + 1) % kBatch == 0) checkpoint();
  }
  const double secs =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const double state_per_key =
      static_cast<double>(heap_after - heap_before) / static_cast<double>(keys);
  std::printf(
      "{\"benchmark\": \"window\", \"keys\": %d, \"events\": %ld, \"events_per_s\": %.0f, "
      "\"state_bytes_per_key\": %.0f, \"checkpoint_bytes_per_event\": %.0f, "
      "\"results_emitted\": %llu, \"stale\": %llu, "
      "\"setup\": \"watermark (ms field, 1 s out of order, 30 s lateness) + window (10 s "
      "tumbling, key field, count/sum/min/max/avg/p95), JSON parse in both, one thread, the "
      "changed state taken every %ld events; each key once per second of event time; state "
      "measured by mallinfo2 at steady state (the open window and the fired ones still within "
      "lateness: %.1f windows per key)\"}\n",
      keys, events - timed_from, (events - timed_from) / secs, state_per_key,
      static_cast<double>(checkpoint_bytes) / static_cast<double>(events - timed_from),
      static_cast<unsigned long long>(results), static_cast<unsigned long long>(out.side_), kBatch,
      windows_per_key);
  if (results == 0 || out.side_ > 0) {  // a setup that refuses readings measures nothing
    std::fprintf(stderr, "window bench: %llu readings refused, %llu results: not a measurement\n",
                 static_cast<unsigned long long>(out.side_),
                 static_cast<unsigned long long>(results));
    return 1;
  }
  return 0;
}
