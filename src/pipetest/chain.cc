#include "pipetest/chain.h"

#include <fmt/format.h>

#include "config/component_error.h"
#include "util/json_check.h"

namespace seedance::pipetest {

namespace {
constexpr int64_t kTickNs = 100'000'000;  // ProcessingLoop::kTickInterval
}  // namespace

// What a stage writes to: Emit goes to the next stage (after the last: main), EmitSide out.
class Chain::StageOutput final : public ProcessorOutput {
 public:
  StageOutput(Chain& chain, size_t next) : chain_(chain), next_(next) {}
  void Emit(Event&& event) override { chain_.RunFrom(next_, std::move(event)); }
  void EmitSide(Output output, Event&& event, std::string_view reason) override {
    chain_.emitted_.push_back(Emitted{std::string(OutputName(output)),
                                      chain_.stages_[next_ - 1].name, std::string(reason),
                                      std::move(event)});
  }
  void EmitWatermark(std::string_view scope, int64_t watermark_ns) override {
    if (next_ >= chain_.stages_.size()) return;  // no later stage keeps event time
    StageOutput out(chain_, next_ + 1);
    chain_.stages_[next_].processor->OnWatermark(scope, watermark_ns, out);
  }

 private:
  Chain& chain_;
  size_t next_;
};

Result<std::unique_ptr<Chain>> Chain::Build(const config::PipelineConfig& config,
                                            const std::vector<std::string>& names,
                                            const PluginRegistry& registry, int64_t clock_ns) {
  std::unique_ptr<Chain> chain(new Chain());
  chain->now_ns_ = chain->ticked_ns_ = clock_ns;
  std::vector<const config::ComponentConfig*> picked;
  if (names.empty()) {
    for (const auto& c : config.processors) picked.push_back(&c);
  }
  for (const std::string& name : names) {
    const config::ComponentConfig* found = nullptr;
    for (const auto& c : config.processors) {
      if (c.name == name) found = &c;
    }
    if (found == nullptr) {
      std::string known;
      for (const auto& c : config.processors) known += (known.empty() ? "" : ", ") + c.name;
      return InvalidArgumentError(fmt::format("no processor \"{}\" in {} (it has: {})", name,
                                              config.file, known.empty() ? "none" : known));
    }
    picked.push_back(found);
  }
  if (picked.empty()) return InvalidArgumentError(config.file + " has no processors to test");
  Chain* self = chain.get();
  for (const config::ComponentConfig* c : picked) {
    Stage stage;
    stage.name = c->name;
    stage.stats = std::make_unique<ComponentStats>(chain->metrics_, "processor", c->name);
    PluginContext ctx;
    ctx.name = c->name;
    ctx.instance = "seedance-test";
    ctx.metrics = &chain->metrics_;
    ctx.stats = stage.stats.get();
    ctx.now_ns = [self] { return self->now_ns_; };
    ctx.validate_only = true;  // nothing to start or watch: a script is read once
    auto made = registry.FindProcessor(c->type)->create(c->params, ctx);
    if (!made) {
      return config::ComponentError(made.error(), c->location, "processor", c->name);
    }
    stage.processor = std::move(made).value();
    chain->stages_.push_back(std::move(stage));
  }
  return chain;
}

Chain::~Chain() = default;

void Chain::Feed(Event event) {
  event.ingest_time_ns = now_ns_;
  if (event.event_time_ns == 0) event.event_time_ns = now_ns_;
  if (event.format == PayloadFormat::kJson) {
    if (Status s = CheckJson(event.payload); !s.ok()) {  // as the processing loop does
      event.format = PayloadFormat::kRaw;
      emitted_.push_back(Emitted{"error", event.source, s.message(), std::move(event)});
      return;
    }
  }
  RunFrom(0, std::move(event));
}

void Chain::RunFrom(size_t stage, Event&& event) {
  if (stage >= stages_.size()) {
    const std::string* named = event.FindHeader(kOutputHeader);
    emitted_.push_back(Emitted{named ? *named : "main", "", "", std::move(event)});
    return;
  }
  stages_[stage].stats->events_in.Add();
  StageOutput out(*this, stage + 1);
  stages_[stage].processor->Process(std::move(event), out);
}

void Chain::Advance(int64_t ns) {
  const int64_t until = now_ns_ + ns;
  while (ticked_ns_ + kTickNs <= until) {
    ticked_ns_ += kTickNs;
    now_ns_ = ticked_ns_;
    Tick();
  }
  now_ns_ = until;
}

void Chain::Tick() {
  for (size_t i = 0; i < stages_.size(); ++i) {
    StageOutput out(*this, i + 1);
    stages_[i].processor->Tick(now_ns_, out);
  }
}

void Chain::Watermark(int64_t watermark_ns) {
  StageOutput out(*this, 1);
  stages_[0].processor->OnWatermark("", watermark_ns, out);
}

}  // namespace seedance::pipetest
