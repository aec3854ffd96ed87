// Chain: processors of a pipeline config run on their own, for `seedance test`. They are made
// by the same factories with the same parameters as in `run` (so the Lua sandbox and its limits
// are the same), an event's JSON is checked as the processing loop checks it, watermarks pass
// from stage to stage as there, and the wall clock is a fake one the test moves.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "config/config.h"
#include "observe/component_stats.h"
#include "observe/metrics.h"
#include "seedance/plugin_context.h"
#include "seedance/plugin_registry.h"
#include "seedance/processor.h"

namespace seedance::pipetest {

// An event that came out of the chain.
struct Emitted {
  std::string output;     // main, error, stale, rejected, or a named output
  std::string component;  // the processor that sent it to a side output ("" on main)
  std::string reason;     // side outputs: why
  Event event;
};

class Chain {
 public:
  // The processors named (empty: every one, in config order), in that order, with the fake
  // clock at `clock_ns`. kInvalidArgument for an unknown name or a processor that cannot be
  // made (the message says which and why).
  static Result<std::unique_ptr<Chain>> Build(const config::PipelineConfig& config,
                                              const std::vector<std::string>& names,
                                              const PluginRegistry& registry, int64_t clock_ns);
  ~Chain();

  // One event in (its ingest time the clock's), through every stage.
  void Feed(Event event);
  // The clock moves on by `ns`; every processor ticks each 100 ms of it, as in `run`.
  void Advance(int64_t ns);
  // Event time reached `watermark_ns` for the whole stream: the first stage hears it.
  void Watermark(int64_t watermark_ns);

  int64_t now_ns() const { return now_ns_; }
  std::vector<Emitted>& emitted() { return emitted_; }

 private:
  class StageOutput;
  struct Stage {
    std::string name;
    std::unique_ptr<ComponentStats> stats;
    std::unique_ptr<Processor> processor;
  };
  Chain() = default;
  void RunFrom(size_t stage, Event&& event);
  void Tick();

  observe::MetricsRegistry metrics_;
  std::vector<Stage> stages_;
  std::vector<Emitted> emitted_;
  int64_t now_ns_ = 0;
  int64_t ticked_ns_ = 0;
};

}  // namespace seedance::pipetest
