// Pipeline: builds the components of a PipelineConfig and runs them.
//
//   sources (event loop) ─► IngestQueue ─► processing thread: JSON check, processors in
//   order ─► Router ─► SinkRunner per sink (event loop) ─► sinks
//
// Its named parts, each in its own file with its own tests: Router (core/router.h),
// SinkRunner (core/sink_runner.h, the delivery policy), Checkpointer (core/checkpointer.h,
// state of stateful processors), Reloader (core/reloader.h, SIGHUP). What stays here: building
// the components, the processing loop (batches from the ingest queue, commit, checkpoint,
// acknowledgement) and shutdown.
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
#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "config/config.h"
#include "core/checkpointer.h"
#include "core/component_stats.h"
#include "core/ingest_queue.h"
#include "core/redelivery_guard.h"
#include "core/reloader.h"
#include "core/router.h"
#include "core/sink_runner.h"
#include "governor/memory_budget.h"
#include "observe/metrics.h"
#include "seedance/plugin_registry.h"
#include "storage/checkpoint_log.h"
#include "storage/durable_queue.h"
#include "util/event_loop.h"
#include "util/log.h"

namespace seedance {

class Pipeline : private SourceOutput {
 public:
  // Builds every component. With `validate_only`, plugins check what they can without
  // network (e.g. Lua scripts compile) and nothing is started.
  static Result<std::unique_ptr<Pipeline>> Create(const config::PipelineConfig& config,
                                                  const PluginRegistry& registry,
                                                  observe::MetricsRegistry& metrics,
                                                  bool validate_only = false);
  ~Pipeline() override;

  // Starts the loop, the processing thread, the sinks and then the sources.
  Status Start();
  // Graceful stop; returns true when every accepted event was delivered in time.
  bool Shutdown();

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
  };
  class StageOutput;

  Pipeline(const config::PipelineConfig& config, observe::MetricsRegistry& metrics);

  // SourceOutput
  bool TryEmit(Event& event, AckHandle ack) override;
  bool TryEmitInvalid(Event& event, AckHandle ack, std::string_view reason) override;
  bool TryEmitAll(std::vector<Event>& events, Acknowledger* owner, uint64_t first_token) override;
  void WhenWritable(std::function<void()> callback) override;
  uint64_t NextEventId() override;
  Event TakeEvent() override;
  // Processing thread: the batch's events are done with (in the durable queue); their storage
  // goes back to the pool sources take events from.
  void RecycleEvents(std::vector<IngestItem>& items);

  void ProcessingLoop();
  void ProcessOne(IngestItem& item);
  // Durable mode: makes the batch's records visible and durable, retrying on I/O errors and
  // a full disk until the shutdown deadline. False when it gave up (nothing may be acked).
  bool CommitBatch();
  // Stateful processors: the Checkpointer, which restores their state.
  Status RestoreCheckpoint();
  // Commits the state changed by the batch (and its redelivery ids) before it is acknowledged,
  // retrying until the shutdown deadline. False when it gave up.
  bool SaveCheckpoint();
  // True once the shutdown deadline has passed (retry loops give up then).
  bool PastShutdownDeadline() const;
  void RunFrom(size_t stage, Event&& event);
  // Processing thread: a side output through the router; a failed append fails the batch.
  void RouteSide(Output output, Event&& event, std::string_view reason,
                 const std::string& component);
  // Until when a push from the processing thread may wait for room (shutdown sets it).
  std::chrono::steady_clock::time_point PushDeadline() const;

  // limits.memory: one step of the governor every limits.step, on the event loop.
  void GovernorStep();

  config::PipelineConfig config_;
  observe::MetricsRegistry& metrics_;
  // Outlives the loop and every component: they credit it until they are gone.
  std::unique_ptr<governor::MemoryBudget> budget_;  // null without limits.memory
  EventLoop loop_;
  std::unique_ptr<boost::asio::steady_timer> governor_timer_;
  std::unique_ptr<IngestQueue> ingest_;
  std::unique_ptr<DurableQueue> queue_;  // null with buffer: memory
  std::vector<SourceSlot> sources_;
  std::vector<ProcessorSlot> processors_;
  std::vector<SinkSlot> sinks_;
  std::unique_ptr<Router> router_;
  std::thread processing_;
  std::atomic<uint64_t> next_id_{1};
  // Events with storage, from the processing thread back to the sources (bounded).
  std::mutex event_pool_mu_;
  std::vector<Event> event_pool_;
  std::atomic<bool> stopping_{false};
  // Steady-clock ns after which sink pushes stop waiting for room (set by Shutdown).
  std::atomic<int64_t> push_deadline_ns_{INT64_MAX};
  // Processing thread: an event of the current batch could not be appended (shutdown).
  bool batch_failed_ = false;
  util::LogLimiter log_limiter_;
  // Fault injection for tests: SEEDANCE_TEST_ACK_DELAY_MS widens the gap between a batch's
  // commit and its acknowledgements, where a crash makes the broker redeliver.
  std::chrono::milliseconds test_ack_delay_{0};
  std::unique_ptr<Checkpointer> checkpoint_;  // null without stateful processors
  RedeliveryGuard redelivery_;
  std::unique_ptr<Reloader> reloader_;
  bool started_ = false;
  bool shut_down_ = false;
};

}  // namespace seedance
