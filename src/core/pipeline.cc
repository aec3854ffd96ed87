#include "core/pipeline.h"

#include <unistd.h>

#include <filesystem>
#include <set>

#include <fmt/format.h>

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

}  // namespace

Result<std::unique_ptr<Pipeline>> Pipeline::Create(const config::PipelineConfig& config,
                                                   const PluginRegistry& registry,
                                                   observe::MetricsRegistry& metrics,
                                                   const PipelineOptions& options) {
  const bool validate_only = options.validate_only;
  observe::TapHub* const taps = options.taps;
  std::unique_ptr<Pipeline> p(new Pipeline(config, metrics));
  p->taps_ = taps;
  const std::string instance = InstanceName(config.queue.data_dir);
  auto context = [&](const config::ComponentConfig& c, ComponentStats* stats) {
    PluginContext ctx;
    ctx.name = c.name;
    ctx.instance = instance;
    ctx.state_files = &p->state_files_;
    ctx.loop = &p->loop_;
    ctx.metrics = &metrics;
    ctx.stats = stats;
    ctx.validate_only = validate_only;
    ctx.redelivery = &p->redelivery_;
    ctx.positions = &p->positions_;
    ctx.memory = p->budget_.get();
    return ctx;
  };
  // Every component is built before any error is returned, so `validate` (and a failed
  // start) reports every problem at once, not only the first.
  std::vector<std::string> problems;
  Status first_problem;
  auto problem = [&](const Status& s, const std::string& where) {
    if (first_problem.ok()) first_problem = s;
    problems.push_back(s.WithContext(where).message());
  };
  for (const auto& c : config.sources) {
    auto stats = std::make_unique<ComponentStats>(metrics, "source", c.name);
    PluginContext ctx = context(c, stats.get());
    auto made = registry.FindSource(c.type)->create(c.params, ctx);
    if (!made) {
      problem(made.error(), fmt::format("{}: source \"{}\"", c.location, c.name));
      continue;
    }
    p->sources_.push_back(
        SourceSlot{c.name, std::move(stats), std::move(made).value(), c.location});
  }
  for (const auto& c : config.processors) {
    auto stats = std::make_unique<ComponentStats>(metrics, "processor", c.name);
    PluginContext ctx = context(c, stats.get());
    auto made = registry.FindProcessor(c.type)->create(c.params, ctx);
    if (!made) {
      problem(made.error(), fmt::format("{}: processor \"{}\"", c.location, c.name));
      continue;
    }
    p->processors_.push_back(ProcessorSlot{c.name, std::move(stats), std::move(made).value()});
  }
  struct MadeSink {
    std::unique_ptr<ComponentStats> stats;
    std::unique_ptr<Sink> sink;
    DeliveryPolicy policy;
  };
  std::vector<MadeSink> sinks;
  for (const auto& c : config.sinks) {
    auto stats = std::make_unique<ComponentStats>(metrics, "sink", c.name);
    PluginContext ctx = context(c, stats.get());
    const SinkFactory* factory = registry.FindSink(c.type);
    auto policy = ReadDeliveryPolicy(c.params, factory->delivery);
    if (policy) ctx.attempt_timeout = policy->timeout;
    auto made = policy ? factory->create(c.params, ctx) : policy.error();
    if (!made) {
      problem(made.error(), fmt::format("{}: sink \"{}\"", c.location, c.name));
      continue;
    }
    sinks.push_back(MadeSink{std::move(stats), std::move(made).value(), std::move(policy).value()});
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
  p->router_->SetTaps(taps);
  for (size_t i = 0; i < config.sinks.size(); ++i) {
    const auto& c = config.sinks[i];
    auto& [stats, made, policy] = sinks[i];
    Pipeline* self = p.get();
    std::string name = c.name;
    auto runner = std::make_unique<SinkRunner>(
        c.name, std::move(made), std::move(policy), config.queue_capacity, p->loop_, *stats,
        [self, name](Event&& e, const std::string& reason) {
          self->router_->RouteRejected(std::move(e), reason, name);
        },
        p->queue_ ? p->queue_->OpenCursor(c.name, RecordInputs(c), NewCursorAt(options, c.name))
                  : nullptr,
        p->budget_.get());
    runner->SetTaps(taps);
    runner->SetRouting(SinkRunner::Routing{
        .topics = c.topics, .by_output = !named_outputs.empty(), .outputs = OutputNames(c)});
    if (p->budget_ && p->queue_) p->budget_->AddHolder(runner.get());
    p->router_->AddSink(runner.get(), RecordInputs(c));
    p->sinks_.push_back(SinkSlot{std::move(stats), std::move(runner), c.inputs, c.location});
  }
  std::vector<Reloader::Target> reloadable;
  for (const auto& slot : p->processors_) reloadable.push_back({slot.name, slot.processor.get()});
  p->reloader_ = std::make_unique<Reloader>(std::move(reloadable));
  if (p->queue_) {
    Pipeline* self = p.get();
    p->queue_->SetCommitListener([self] {
      for (auto& s : self->sinks_) s.runner->NotifyAppended();
    });
  }
  p->processing_loop_ = std::make_unique<ProcessingLoop>(p->ProcessingParts());
  return p;
}

ProcessingLoop::Parts Pipeline::ProcessingParts() {
  ProcessingLoop::Parts parts{.ingest = ingest_.get(),
                              .router = router_.get(),
                              .queue = queue_.get(),
                              .checkpoint = checkpoint_.get(),
                              .reloader = reloader_.get(),
                              .taps = taps_,
                              .wakes = &wakes_};
  for (const auto& slot : processors_) {
    parts.stages.push_back({slot.name, slot.stats.get(), slot.processor.get()});
  }
  parts.on_invalid_json = [this](const std::string& source) {
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
    SEEDANCE_RETURN_IF_ERROR(s.runner->sink().Start().WithContext(
        fmt::format("{}: sink \"{}\"", s.location, s.runner->name())));
  }
  if (budget_) {
    governor_timer_ = std::make_unique<boost::asio::steady_timer>(loop_.io());
    loop_.Post([this] { GovernorStep(); });
  }
  loop_.Start();
  for (auto& s : sinks_) s.runner->NotifyAppended();  // deliver what a previous run left queued
  processing_ = std::thread([this] {
    util::NameThisThread("sd-process");
    util::ScheduleThisThreadAsBatch();
    processing_loop_->Run();
  });
  started_ = true;
  Status result;
  std::mutex mu;
  std::condition_variable cv;
  bool done = false;
  loop_.Post([&] {
    Status s;
    for (auto& src : sources_) {
      s = src.source->Start(*this).WithContext(
          fmt::format("{}: source \"{}\"", src.location, src.name));
      if (!s.ok()) break;
    }
    std::lock_guard<std::mutex> lock(mu);
    result = s;
    done = true;
    cv.notify_all();
  });
  std::unique_lock<std::mutex> lock(mu);
  cv.wait(lock, [&] { return done; });
  return result;
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

uint64_t Pipeline::NextEventId() { return next_id_.fetch_add(1, std::memory_order_relaxed); }

Event Pipeline::TakeEvent() { return event_pool_.Take(); }

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
  SEEDANCE_LOG_INFO("pipeline", "stopped{}",
                    drained ? "; everything delivered"
                            : (queue_ ? "; undelivered events stay in the durable queue" : ""));
  return all_delivered;
}

}  // namespace seedance
