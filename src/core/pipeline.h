// Pipeline: builds the components of a PipelineConfig and runs them.
//
//   sources (event loop) ─► IngestQueue ─► processing thread: JSON check, processors in
//   order ─► Router ─► SinkRunner per sink (event loop) ─► sinks
//
// Its named parts, each in its own file with its own tests: ProcessingLoop
// (core/processing_loop.h: batches from the ingest queue through the processors, commit,
// checkpoint, acknowledgement), Router (core/router.h), SinkRunner (core/delivery/sink_runner.h,
// the delivery policy), Checkpointer (core/checkpointer.h, state of stateful processors), Reloader
// (core/reloader.h, SIGHUP). What stays here: building and wiring the components, start and
// shutdown.
//
// With `queue.buffer: disk` (the default) the Router appends to the DurableQueue and each
// SinkRunner reads from it; with `memory` the Router pushes into the runners' bounded queues.
// Side outputs (error, rejected, stale) are routed to the sinks that list them in `inputs`;
// with no such sink they are counted and dropped. An event is acknowledged upstream once it
// and everything derived from it are committed to the durable queue (memory: handed to the
// sink queues). Shutdown stops the sources, drains what was taken in, and waits up to
// shutdown_timeout for the sinks; with the durable queue, whatever is left is delivered
// after the next start.
#pragma once

#include <atomic>
#include <boost/asio/steady_timer.hpp>
#include <functional>
#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "config/config.h"
#include "core/checkpointer.h"
#include "core/config_diff.h"
#include "core/delivery/sink_runner.h"
#include "core/event_pool.h"
#include "core/ingest_queue.h"
#include "core/processing_loop.h"
#include "core/redelivery_guard.h"
#include "core/reloader.h"
#include "core/router.h"
#include "core/stream_positions.h"
#include "governor/memory_budget.h"
#include "observe/component_stats.h"
#include "observe/metrics.h"
#include "observe/tap_hub.h"
#include "observe/tracer.h"
#include "seedance/plugin_context.h"
#include "seedance/plugin_registry.h"
#include "storage/checkpoint_log.h"
#include "storage/durable_queue.h"
#include "storage/state_files.h"
#include "util/event_loop.h"
#include "util/log.h"
#include "util/loop_signal.h"

namespace seedance {

struct PipelineOptions {
  // Plugins check what they can without network (e.g. Lua scripts compile); nothing is
  // started and no queue is opened.
  bool validate_only = false;
  observe::TapHub* taps = nullptr;  // the process's taps (null: none)
  // Sinks added by a reload: without a saved position they start at the durable queue's end,
  // not at its oldest record (that was queued for the sinks configured before).
  std::vector<std::string> sinks_added;
  // Called on the event loop once every source's input has ended (SourceOutput::InputEnded;
  // a `stdin` source whose input was closed): `seedance run` then stops as on SIGTERM.
  std::function<void()> inputs_ended;
};

class Pipeline : private SourceOutput {
 public:
  // Builds every component.
  static Result<std::unique_ptr<Pipeline>> Create(const config::PipelineConfig& config,
                                                  const PluginRegistry& registry,
                                                  observe::MetricsRegistry& metrics,
                                                  const PipelineOptions& options = {});
  ~Pipeline() override;

  // Starts the loop, the processing thread, the sinks and then the sources.
  Status Start();
  // Graceful stop; returns true when every accepted event was delivered in time.
  bool Shutdown();

  // A reload that changes sources or sinks only (core/config_diff.h: `rebuild` without
  // `whole`; durable buffers for sink changes): only those are built again, while the rest
  // runs on. Sinks first: a removed or changed sink's runner takes no new batch, its open
  // jobs end (up to shutdown_timeout; those still open then are read again), it stops and
  // lets go of its cursor; the new runner opens the sink's cursor again where it stopped (an
  // added sink: at the queue's end). Then sources: a removed or changed source stops
  // reading, what it emitted is processed and acknowledged (up to shutdown_timeout), it
  // closes, and the new one starts (connects, subscribes). Processors' parameters are taken
  // as by Reconfigure. Replaced components stay allocated, stopped, until the pipeline ends
  // (late callbacks of their connections may still reach them); retired() counts them.
  // Not all or nothing: on an error (a sink or source that fails to start) the pipeline is
  // part old, part new, and the caller rebuilds it whole. The positions of removed sinks are
  // the caller's to drop (DurableQueue::ForgetCursor) once it keeps the new configuration.
  Status Replace(const config::PipelineConfig& next, const ConfigDiff& diff);
  // Sources and sinks replaced by Replace() and kept until the pipeline ends.
  size_t retired() const { return retired_sources_.size() + retired_sinks_.size(); }

  // SIGHUP: takes the changed parameters of processors (window sizes, aggregates, lateness)
  // between two batches, keeping their state. All or nothing: kInvalidArgument when a
  // processor refuses its new parameters, kFailedPrecondition when the processor list changed
  // (that needs a restart); the running configuration stays then. Other sections
  // (sources, sinks, queue) are not reloaded; `ignored` lists those that differ.
  Status Reconfigure(const config::PipelineConfig& next, std::vector<std::string>* ignored);

  EventLoop& loop() { return loop_; }
  bool started() const { return started_; }

 private:
  struct SourceSlot {
    std::string name;
    std::unique_ptr<ComponentStats> stats;
    std::unique_ptr<Source> source;
    std::string location;  // config file:line, for errors at Start()
  };
  struct ProcessorSlot {
    std::string name;
    std::unique_ptr<ComponentStats> stats;
    std::unique_ptr<Processor> processor;
  };
  struct SinkSlot {
    std::unique_ptr<ComponentStats> stats;
    std::unique_ptr<SinkRunner> runner;
    std::vector<Output> inputs;
    std::string location;  // config file:line, for errors at Start()
  };
  struct MadeSink {  // a sink built, before its runner
    std::unique_ptr<ComponentStats> stats;
    std::unique_ptr<Sink> sink;
    DeliveryPolicy policy;
  };
  Pipeline(const config::PipelineConfig& config, observe::MetricsRegistry& metrics);

  PluginContext ContextFor(const config::ComponentConfig& c, ComponentStats* stats,
                           bool validate_only);
  Result<SourceSlot> MakeSource(const config::ComponentConfig& c, bool validate_only);
  Result<MadeSink> MakeSink(const config::ComponentConfig& c, bool validate_only);
  // The runner of `made`, reading through its cursor (durable) from `at` when the sink has
  // no saved position; routed by output when some processor declares named outputs.
  SinkSlot MakeRunner(const config::ComponentConfig& c, MadeSink made,
                      storage::DurableQueue::NewCursorAt at, bool by_output);
  // Replace(), each part.
  Status ReplaceSinks(const config::PipelineConfig& next, const ConfigDiff& diff);
  Status ReplaceSources(const config::PipelineConfig& next, const ConfigDiff& diff);

  // SourceOutput
  bool TryEmit(Event& event, AckHandle ack) override;
  bool TryEmitInvalid(Event& event, AckHandle ack, std::string_view reason) override;
  bool TryEmitAll(std::vector<Event>& events, Acknowledger* owner, uint64_t first_token,
                  uint32_t stream, uint64_t first_end) override;
  void WhenWritable(std::function<void()> callback) override;
  void WhenRoomFor(size_t events, std::function<void()> callback) override;
  uint64_t NextEventId() override;
  Event TakeEvent() override;
  void InputEnded(std::string_view name) override;
  // Processing thread: the batch's events are done with (in the durable queue); their storage
  // goes back to the pool sources take events from.
  void RecycleEvents(std::vector<IngestItem>& items);

  // Stateful processors: the Checkpointer, which restores their state.
  Status RestoreCheckpoint();
  // What the processing loop works with (after every component is built).
  ProcessingLoop::Parts ProcessingParts();

  // limits.memory: one step of the governor every limits.step, on the event loop.
  void GovernorStep();

  config::PipelineConfig config_;
  observe::MetricsRegistry& metrics_;
  // Outlives the loop and every component: they credit it until they are gone.
  std::unique_ptr<governor::MemoryBudget> budget_;  // null without limits.memory
  std::unique_ptr<observe::Tracer> tracer_;         // null without tracing.url
  EventLoop loop_;
  // The processing thread's wake-ups of the loop (acknowledgements, sink kicks): one per batch.
  util::WakeBatcher wakes_{loop_.io()};
  std::unique_ptr<boost::asio::steady_timer> governor_timer_;
  std::unique_ptr<IngestQueue> ingest_;
  std::unique_ptr<storage::DurableQueue> queue_;  // null with buffer: memory
  const PluginRegistry* registry_ = nullptr;
  std::string instance_;  // PluginContext::instance
  // Changed on the event loop only, under sources_mu_ (read there without it; the processing
  // thread reads it under the lock).
  std::mutex sources_mu_;
  std::vector<SourceSlot> sources_;
  std::vector<ProcessorSlot> processors_;
  std::vector<SinkSlot> sinks_;  // the main thread's (Create, Start, Replace, Shutdown)
  // Replaced by a reload: stopped, kept until the pipeline ends (see Replace()).
  std::vector<SourceSlot> retired_sources_;
  std::vector<SinkSlot> retired_sinks_;
  std::unique_ptr<Router> router_;
  std::thread processing_;
  std::atomic<uint64_t> next_id_{1};
  EventPool event_pool_;  // from the processing thread back to the sources
  std::atomic<bool> stopping_{false};
  std::unique_ptr<Checkpointer> checkpoint_;  // null without stateful processors
  RedeliveryGuard redelivery_;
  StreamPositions positions_;
  storage::StateFileStore state_files_{config_.queue.data_dir};  // the plugins' own state
  std::unique_ptr<Reloader> reloader_;
  std::function<void()> inputs_ended_;   // PipelineOptions::inputs_ended
  std::set<std::string> sources_ended_;  // event loop
  std::unique_ptr<ProcessingLoop> processing_loop_;
  observe::TapHub* taps_ = nullptr;  // the process's; outlives the pipeline
  bool started_ = false;
  bool shut_down_ = false;
};

}  // namespace seedance
