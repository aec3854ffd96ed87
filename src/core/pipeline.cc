#include "core/pipeline.h"

#include <unistd.h>

#include <filesystem>
#include <set>

#include <fmt/format.h>

#include "config/component_error.h"
#include "governor/heap.h"
#include "seedance/plugin_context.h"
#include "util/crc32c.h"
#include "util/strings.h"
#include "util/thread_name.h"

namespace seedance {
Pipeline::Pipeline(const config::PipelineConfig& config, observe::MetricsRegistry& metrics)
    : config_(config), metrics_(metrics) {
  governor::FixMmapThreshold();
  if (config.limits.memory > 0 && config.queue.durable) {
    governor::TuneHeapForBudget();
    budget_ = std::make_unique<governor::MemoryBudget>(
        governor::MemoryBudgetOptions{.capacity = config.limits.memory,
                                      .step = config.limits.step,
                                      .policy = config.limits.policy},
        metrics);
  }
  // With a budget, the ingest queue may hold a quarter of its queued bytes; batches and
  // request bodies the rest.
  ingest_ = std::make_unique<IngestQueue>(config.queue_capacity, loop_, budget_.get(),
                                          budget_ ? budget_->IngestBytes() : 0);
}

Pipeline::~Pipeline() {
  if (started_ && !shut_down_) Shutdown();
  loop_.Join();
}

namespace {

// The outputs a sink reads records of: its inputs, and main for named outputs (they travel
// on main).
std::vector<Output> RecordInputs(const config::ComponentConfig& c) {
  std::vector<Output> inputs = c.inputs;
  if (!c.named_inputs.empty() &&
      std::find(inputs.begin(), inputs.end(), Output::kMain) == inputs.end()) {
    inputs.push_back(Output::kMain);
  }
  return inputs;
}

// Every output a sink consumes, by name.
std::vector<std::string> OutputNames(const config::ComponentConfig& c) {
  std::vector<std::string> names = c.named_inputs;
  for (Output o : c.inputs) names.emplace_back(OutputName(o));
  return names;
}

storage::DurableQueue::NewCursorAt NewCursorAt(const PipelineOptions& options,
                                               const std::string& sink) {
  const auto& added = options.sinks_added;
  return std::find(added.begin(), added.end(), sink) != added.end()
             ? storage::DurableQueue::NewCursorAt::kEnd
             : storage::DurableQueue::NewCursorAt::kOldest;
}

// See PluginContext::instance.
std::string InstanceName(const std::string& data_dir) {
  std::error_code ec;
  std::filesystem::path dir = std::filesystem::absolute(data_dir, ec);
  if (!ec) dir = std::filesystem::weakly_canonical(dir, ec);
  const std::string path = ec ? data_dir : dir.string();
  char host[65] = {0};
  gethostname(host, sizeof host - 1);
  return fmt::format("{}-{:08x}", host, util::Crc32c(path));
}

// True when some processor declares named outputs: sinks then take events by output.
bool HasNamedOutputs(const config::PipelineConfig& config) {
  return std::any_of(config.processors.begin(), config.processors.end(),
                     [](const auto& c) { return !NamedOutputs(c.params).empty(); });
}

bool Contains(const std::vector<std::string>& names, const std::string& name) {
  return std::find(names.begin(), names.end(), name) != names.end();
}

}  // namespace

PluginContext Pipeline::ContextFor(const config::ComponentConfig& c, ComponentStats* stats,
                                   bool validate_only) {
  PluginContext ctx;
  ctx.name = c.name;
  ctx.instance = instance_;
  ctx.state_files = &state_files_;
  ctx.loop = &loop_;
  ctx.metrics = &metrics_;
  ctx.stats = stats;
  ctx.validate_only = validate_only;
  ctx.redelivery = &redelivery_;
  ctx.positions = &positions_;
  ctx.memory = budget_.get();
  return ctx;
}

Result<Pipeline::SourceSlot> Pipeline::MakeSource(const config::ComponentConfig& c,
                                                  bool validate_only) {
  auto stats = std::make_unique<ComponentStats>(metrics_, "source", c.name);
  PluginContext ctx = ContextFor(c, stats.get(), validate_only);
  auto made = registry_->FindSource(c.type)->create(c.params, ctx);
  if (!made) return config::ComponentError(made.error(), c.location, "source", c.name);
  return SourceSlot{c.name, std::move(stats), std::move(made).value(), c.location};
}

Result<Pipeline::MadeSink> Pipeline::MakeSink(const config::ComponentConfig& c,
                                              bool validate_only) {
  auto stats = std::make_unique<ComponentStats>(metrics_, "sink", c.name);
  PluginContext ctx = ContextFor(c, stats.get(), validate_only);
  const SinkFactory* factory = registry_->FindSink(c.type);
  auto policy = ReadDeliveryPolicy(c.params, factory->delivery);
  if (policy) ctx.attempt_timeout = policy->timeout;
  auto made = policy ? factory->create(c.params, ctx) : policy.error();
  if (!made) return config::ComponentError(made.error(), c.location, "sink", c.name);
  return MadeSink{std::move(stats), std::move(made).value(), std::move(policy).value()};
}

Pipeline::SinkSlot Pipeline::MakeRunner(const config::ComponentConfig& c, MadeSink made,
                                        storage::DurableQueue::NewCursorAt at, bool by_output) {
  std::string name = c.name;
  auto runner = std::make_unique<SinkRunner>(
      c.name, std::move(made.sink), std::move(made.policy), config_.queue_capacity, loop_,
      *made.stats,
      [this, name](Event&& e, const std::string& reason) {
        router_->RouteRejected(std::move(e), reason, name);
      },
      queue_ ? queue_->OpenCursor(c.name, RecordInputs(c), at) : nullptr, budget_.get());
  runner->SetTaps(taps_);
  runner->SetTracer(tracer_.get());
  runner->SetRouting(
      SinkRunner::Routing{.topics = c.topics, .by_output = by_output, .outputs = OutputNames(c)});
  return SinkSlot{std::move(made.stats), std::move(runner), c.inputs, c.location};
}

Result<std::unique_ptr<Pipeline>> Pipeline::Create(const config::PipelineConfig& config,
                                                   const PluginRegistry& registry,
                                                   observe::MetricsRegistry& metrics,
                                                   const PipelineOptions& options) {
  const bool validate_only = options.validate_only;
  std::unique_ptr<Pipeline> p(new Pipeline(config, metrics));
  p->taps_ = options.taps;
  p->registry_ = &registry;
  p->inputs_ended_ = options.inputs_ended;
  if (config.tracing.on() && !validate_only) {
    p->tracer_ = std::make_unique<observe::Tracer>(config.tracing, metrics);
  }
  p->instance_ = InstanceName(config.queue.data_dir);
  // Every component is built before any error is returned, so `validate` (and a failed
  // start) reports every problem at once, not only the first.
  std::vector<std::string> problems;
  Status first_problem;
  auto problem = [&](const Status& s) {
    if (first_problem.ok()) first_problem = s;
    problems.push_back(s.message());
  };
  std::map<std::string, std::string> single;  // type → where the one allowed is
  for (const auto& c : config.sources) {
    if (registry.FindSource(c.type)->info.one_per_pipeline) {
      auto [first, inserted] = single.emplace(c.type, c.location);
      if (!inserted) {
        problem(config::ComponentError(
            Status(StatusCode::kInvalidArgument,
                   fmt::format("a second `{}` source: the process has one such input, and two "
                               "sources would split its lines between them (the first is at {})",
                               c.type, first->second)),
            c.location, "source", c.name));
        continue;
      }
    }
    auto made = p->MakeSource(c, validate_only);
    if (!made) {
      problem(made.error());
      continue;
    }
    p->sources_.push_back(std::move(made).value());
  }
  for (const auto& c : config.processors) {
    auto stats = std::make_unique<ComponentStats>(metrics, "processor", c.name);
    PluginContext ctx = p->ContextFor(c, stats.get(), validate_only);
    auto made = registry.FindProcessor(c.type)->create(c.params, ctx);
    if (!made) {
      problem(config::ComponentError(made.error(), c.location, "processor", c.name));
      continue;
    }
    p->processors_.push_back(ProcessorSlot{c.name, std::move(stats), std::move(made).value()});
  }
  std::vector<MadeSink> sinks;
  for (const auto& c : config.sinks) {
    auto made = p->MakeSink(c, validate_only);
    if (!made) {
      problem(made.error());
      continue;
    }
    sinks.push_back(std::move(made).value());
  }
  // Named outputs (processors' `outputs:`): one no sink consumes is worth a warning (its
  // events go nowhere); a sink input no processor declares was refused by the config.
  std::set<std::string> named_outputs;
  for (const auto& c : config.processors) {
    for (const std::string& name : NamedOutputs(c.params)) named_outputs.insert(name);
  }
  for (const std::string& name : named_outputs) {
    const bool consumed = std::any_of(config.sinks.begin(), config.sinks.end(), [&](const auto& s) {
      return std::find(s.named_inputs.begin(), s.named_inputs.end(), name) != s.named_inputs.end();
    });
    if (!consumed) {
      SEEDANCE_LOG_WARN("pipeline",
                        "no sink consumes the output \"{}\" (inputs: [{}]); its events are "
                        "dropped",
                        name, name);
    }
  }
  if (!problems.empty()) {
    std::string all;
    for (const std::string& m : problems) all += (all.empty() ? "" : "\n") + m;
    return Status(first_problem.code(), all);
  }
  if (!validate_only) SEEDANCE_RETURN_IF_ERROR(p->RestoreCheckpoint());
  if (config.queue.durable && !validate_only) {
    auto queue = storage::DurableQueue::Open(config.queue, metrics);
    if (!queue) return queue.error();
    p->queue_ = std::move(queue).value();
  }
  p->router_ = std::make_unique<Router>(p->queue_.get(), metrics);
  p->router_->SetTaps(options.taps);
  const bool by_output = !named_outputs.empty();
  std::vector<Router::SinkRoute> routes;
  for (size_t i = 0; i < config.sinks.size(); ++i) {
    const auto& c = config.sinks[i];
    SinkSlot slot = p->MakeRunner(c, std::move(sinks[i]), NewCursorAt(options, c.name), by_output);
    if (p->budget_ && p->queue_) p->budget_->AddHolder(slot.runner.get());
    routes.push_back({slot.runner.get(), RecordInputs(c)});
    p->sinks_.push_back(std::move(slot));
  }
  p->router_->SetSinks(routes);
  std::vector<Reloader::Target> reloadable;
  for (const auto& slot : p->processors_) reloadable.push_back({slot.name, slot.processor.get()});
  p->reloader_ = std::make_unique<Reloader>(std::move(reloadable));
  if (p->queue_) {
    Router* router = p->router_.get();
    p->queue_->SetCommitListener([router] { router->NotifyAppended(); });
  }
  p->processing_loop_ = std::make_unique<ProcessingLoop>(p->ProcessingParts());
  return p;
}

Status Pipeline::Replace(const config::PipelineConfig& next, const ConfigDiff& diff) {
  SEEDANCE_RETURN_IF_ERROR(ReplaceSinks(next, diff));
  SEEDANCE_RETURN_IF_ERROR(ReplaceSources(next, diff));
  if (diff.processor_params) {
    std::vector<std::string> ignored;
    SEEDANCE_RETURN_IF_ERROR(reloader_->Reload(config_, next, &ignored));
    config_.processors = next.processors;
  }
  return Status::Ok();
}

Status Pipeline::ReplaceSinks(const config::PipelineConfig& next, const ConfigDiff& diff) {
  if (!diff.sinks.any()) return Status::Ok();
  if (!queue_) return FailedPreconditionError("memory buffers: sinks are replaced by a rebuild");
  // Built first: a sink that cannot be made changes nothing.
  std::vector<std::pair<const config::ComponentConfig*, MadeSink>> made;
  for (const auto& c : next.sinks) {
    if (!Contains(diff.sinks.added, c.name) && !Contains(diff.sinks.changed, c.name)) continue;
    auto sink = MakeSink(c, /*validate_only=*/false);
    if (!sink) return sink.error();
    made.emplace_back(&c, std::move(sink).value());
  }
  // The runners that go: no new batch, open jobs end (bounded), then stopped, their cursors
  // closed with their positions saved.
  const auto deadline = std::chrono::steady_clock::now() + config_.shutdown_timeout;
  std::vector<SinkSlot> kept, going;
  for (SinkSlot& slot : sinks_) {
    const std::string& name = slot.runner->name();
    (Contains(diff.sinks.removed, name) || Contains(diff.sinks.changed, name) ? going : kept)
        .push_back(std::move(slot));
  }
  sinks_.clear();
  for (SinkSlot& slot : going) {
    if (!slot.runner->Drain(deadline)) {
      SEEDANCE_LOG_INFO(
          slot.runner->name(),
          "reload: attempts still open after {} ms; what they carried is sent "
          "again by the new configuration",
          std::chrono::duration_cast<std::chrono::milliseconds>(config_.shutdown_timeout).count());
    }
  }
  loop_.Call([&] {
    for (SinkSlot& slot : going) {
      if (budget_) budget_->RemoveHolder(slot.runner.get());
      slot.runner->Retire();
    }
  });
  // The new runners, in the order of the new configuration.
  const bool by_output = HasNamedOutputs(next);
  std::vector<Router::SinkRoute> routes;
  Status failed;
  for (const auto& c : next.sinks) {
    auto fresh = std::find_if(made.begin(), made.end(), [&](auto& m) { return m.first == &c; });
    if (fresh != made.end()) {
      const auto at = Contains(diff.sinks.added, c.name)
                          ? storage::DurableQueue::NewCursorAt::kEnd
                          : storage::DurableQueue::NewCursorAt::kOldest;
      SinkSlot slot = MakeRunner(c, std::move(fresh->second), at, by_output);
      Status s = loop_.Call([&] {
        Status started = config::ComponentError(slot.runner->sink().Start(), slot.location, "sink",
                                                slot.runner->name());
        if (started.ok() && budget_) budget_->AddHolder(slot.runner.get());
        return started;
      });
      if (!s.ok()) {
        if (failed.ok()) failed = s;
        retired_sinks_.push_back(std::move(slot));
        continue;
      }
      sinks_.push_back(std::move(slot));
    } else {
      auto it = std::find_if(kept.begin(), kept.end(),
                             [&](const SinkSlot& k) { return k.runner->name() == c.name; });
      if (it == kept.end()) continue;
      sinks_.push_back(std::move(*it));
    }
    routes.push_back({sinks_.back().runner.get(), RecordInputs(c)});
  }
  router_->SetSinks(routes);
  for (SinkSlot& slot : going) retired_sinks_.push_back(std::move(slot));
  for (auto& s : sinks_) s.runner->NotifyAppended();
  config_.sinks = next.sinks;
  return failed;
}

Status Pipeline::ReplaceSources(const config::PipelineConfig& next, const ConfigDiff& diff) {
  if (!diff.sources.any()) return Status::Ok();
  std::vector<SourceSlot> fresh;
  for (const auto& c : next.sources) {
    if (!Contains(diff.sources.added, c.name) && !Contains(diff.sources.changed, c.name)) continue;
    auto made = MakeSource(c, /*validate_only=*/false);
    if (!made) return made.error();
    fresh.push_back(std::move(made).value());
  }
  auto going = [&](const SourceSlot& s) {
    return Contains(diff.sources.removed, s.name) || Contains(diff.sources.changed, s.name);
  };
  // Those that go stop reading; what they emitted is processed and acknowledged (bounded),
  // so their acknowledgements reach upstream before they close.
  uint64_t emitted = 0;
  loop_.Call([&] {
    for (SourceSlot& s : sources_) {
      if (going(s)) s.source->Stop();
    }
    emitted = ingest_->pushed();
  });
  const auto deadline = std::chrono::steady_clock::now() + config_.shutdown_timeout;
  while (processing_loop_->handled() < emitted && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  Status failed;
  loop_.Call([&] {
    std::lock_guard<std::mutex> lock(sources_mu_);
    std::vector<SourceSlot> now;
    for (SourceSlot& s : sources_) {
      if (going(s)) {
        s.source->Close();
        retired_sources_.push_back(std::move(s));
      } else {
        now.push_back(std::move(s));
      }
    }
    // The new ones start in the configuration's order, after those that run on.
    for (SourceSlot& s : fresh) {
      Status started = config::ComponentError(s.source->Start(*this), s.location, "source", s.name);
      if (!started.ok()) {
        if (failed.ok()) failed = started;
        s.source->Stop();
        s.source->Close();
        retired_sources_.push_back(std::move(s));
        continue;
      }
      now.push_back(std::move(s));
    }
    sources_ = std::move(now);
  });
  config_.sources = next.sources;
  return failed;
}

ProcessingLoop::Parts Pipeline::ProcessingParts() {
  ProcessingLoop::Parts parts{.ingest = ingest_.get(),
                              .router = router_.get(),
                              .queue = queue_.get(),
                              .checkpoint = checkpoint_.get(),
                              .reloader = reloader_.get(),
                              .taps = taps_,
                              .tracer = tracer_.get(),
                              .wakes = &wakes_};
  for (const auto& slot : processors_) {
    parts.stages.push_back({slot.name, slot.stats.get(), slot.processor.get()});
  }
  parts.on_invalid_json = [this](const std::string& source) {
    std::lock_guard<std::mutex> lock(sources_mu_);
    for (auto& src : sources_) {
      if (src.name == source) {
        src.stats->errors.Add();
        src.stats->Dropped("invalid_json");
      }
    }
  };
  parts.recycle = [this](std::vector<IngestItem>& items) { RecycleEvents(items); };
  // Fault injection for tests: SEEDANCE_TEST_ACK_DELAY_MS widens the gap between a batch's
  // commit and its acknowledgements, where a crash makes the broker redeliver.
  if (const char* delay = std::getenv("SEEDANCE_TEST_ACK_DELAY_MS")) {
    parts.ack_delay = std::chrono::milliseconds(std::atoi(delay));
  }
  return parts;
}

Status Pipeline::RestoreCheckpoint() {
  std::vector<Checkpointer::Stateful> stateful;
  for (const auto& p : processors_) {
    if (p.processor->stateful()) stateful.push_back({p.name, p.processor.get()});
  }
  if (stateful.empty()) return Status::Ok();
  redelivery_.Activate();
  positions_.Activate();
  auto opened =
      Checkpointer::Open(config_.queue, std::move(stateful), redelivery_, positions_, metrics_);
  if (!opened) return opened.error();
  checkpoint_ = std::move(opened).value();
  return Status::Ok();
}

Status Pipeline::Reconfigure(const config::PipelineConfig& next,
                             std::vector<std::string>* ignored) {
  Status s = reloader_->Reload(config_, next, ignored);
  if (s.ok()) {
    for (size_t i = 0; i < processors_.size(); ++i) config_.processors[i] = next.processors[i];
  }
  return s;
}

Status Pipeline::Start() {
  for (auto& s : sinks_) {
    SEEDANCE_RETURN_IF_ERROR(
        config::ComponentError(s.runner->sink().Start(), s.location, "sink", s.runner->name()));
  }
  if (budget_) {
    governor_timer_ = std::make_unique<boost::asio::steady_timer>(loop_.io());
    loop_.Post([this] { GovernorStep(); });
  }
  if (tracer_) tracer_->Start();
  loop_.Start();
  for (auto& s : sinks_) s.runner->NotifyAppended();  // deliver what a previous run left queued
  processing_ = std::thread([this] {
    util::NameThisThread("sd-process");
    util::ScheduleThisThreadAsBatch();
    processing_loop_->Run();
  });
  started_ = true;
  return loop_.Call([&] {
    for (auto& src : sources_) {
      SEEDANCE_RETURN_IF_ERROR(
          config::ComponentError(src.source->Start(*this), src.location, "source", src.name));
    }
    return Status::Ok();
  });
}

void Pipeline::GovernorStep() {
  if (stopping_) return;
  if (queue_) budget_->SetDiskBytes(queue_->disk_bytes());
  budget_->Step();
  governor_timer_->expires_after(config_.limits.step);
  governor_timer_->async_wait([this](const boost::system::error_code& ec) {
    if (!ec) GovernorStep();
  });
}

bool Pipeline::TryEmit(Event& event, AckHandle ack) {
  if (event.id == 0) event.id = NextEventId();
  if (!ingest_->TryPush(event, ack)) return false;
  return true;
}

bool Pipeline::TryEmitInvalid(Event& event, AckHandle ack, std::string_view reason) {
  if (event.id == 0) event.id = NextEventId();
  return ingest_->TryPush(event, ack, reason);
}

bool Pipeline::TryEmitAll(std::vector<Event>& events, Acknowledger* owner, uint64_t first_token,
                          uint32_t stream, uint64_t first_end) {
  for (Event& e : events) {
    if (e.id == 0) e.id = NextEventId();
  }
  return ingest_->TryPushAll(events, owner, first_token, stream, first_end);
}

void Pipeline::WhenWritable(std::function<void()> callback) {
  ingest_->WhenWritable(std::move(callback));
}

void Pipeline::WhenRoomFor(size_t events, std::function<void()> callback) {
  ingest_->WhenRoomFor(events, std::move(callback));
}

uint64_t Pipeline::NextEventId() { return next_id_.fetch_add(1, std::memory_order_relaxed); }

Event Pipeline::TakeEvent() { return event_pool_.Take(); }

void Pipeline::InputEnded(std::string_view name) {
  sources_ended_.emplace(name);
  for (const SourceSlot& s : sources_) {
    if (sources_ended_.count(s.name) == 0) return;  // another source still reads
  }
  if (inputs_ended_) inputs_ended_();
}

void Pipeline::RecycleEvents(std::vector<IngestItem>& items) { event_pool_.GiveAll(items); }

bool Pipeline::Shutdown() {
  if (!started_ || shut_down_) return true;
  shut_down_ = true;
  stopping_ = true;
  auto deadline = std::chrono::steady_clock::now() + config_.shutdown_timeout;
  processing_loop_->SetShutdownDeadline(deadline);
  // A processing thread waiting for room (full sink queue or disk limit) gives up at the
  // deadline, so shutdown cannot hang on a sink that never recovers.
  for (auto& s : sinks_) s.runner->SetShutdownDeadline(deadline);
  if (queue_) queue_->SetShutdownDeadline(deadline);
  SEEDANCE_LOG_INFO(
      "pipeline", "shutting down: stopping sources, flushing sinks (up to {} ms)",
      std::chrono::duration_cast<std::chrono::milliseconds>(config_.shutdown_timeout).count());
  loop_.Post([this] {
    for (auto& s : sources_) s.source->Stop();
  });
  ingest_->Close();
  if (processing_.joinable()) processing_.join();
  bool all_delivered = true;  // nothing lost
  bool drained = true;        // nothing pending
  for (auto& s : sinks_) {
    if (!s.runner->WaitIdle(deadline)) {
      drained = false;
      if (queue_) {
        SEEDANCE_LOG_INFO(s.runner->name(),
                          "shutdown timeout: {} events stay in the durable queue and will be "
                          "delivered after the next start",
                          s.runner->Pending());
      } else {
        all_delivered = false;
        SEEDANCE_LOG_WARN(s.runner->name(), "shutdown timeout: {} events still pending",
                          s.runner->Pending());
      }
    }
  }
  std::mutex mu;
  std::condition_variable cv;
  bool closed = false;
  loop_.Post([&] {
    for (auto& s : sources_) s.source->Close();
    if (governor_timer_) governor_timer_->cancel();
    for (auto& s : sinks_) s.runner->Stop();
    std::lock_guard<std::mutex> lock(mu);
    closed = true;
    cv.notify_all();
  });
  {
    std::unique_lock<std::mutex> lock(mu);
    cv.wait_for(lock, std::chrono::seconds(2), [&] { return closed; });
  }
  loop_.Join();
  if (queue_) {
    queue_->Tick();
    Status s = queue_->Commit();
    if (s.ok() && queue_->config().fsync.mode != storage::QueueConfig::Fsync::kNever)
      s = queue_->Sync();
    if (!s.ok()) SEEDANCE_LOG_ERROR("queue", "final sync failed: {}", s.message());
    queue_->SaveCursors();
  }
  if (tracer_) tracer_->Stop();  // the last spans, once
  SEEDANCE_LOG_INFO("pipeline", "stopped{}",
                    drained ? "; everything delivered"
                            : (queue_ ? "; undelivered events stay in the durable queue" : ""));
  return all_delivered;
}

}  // namespace seedance
