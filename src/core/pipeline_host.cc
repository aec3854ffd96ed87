#include "core/pipeline_host.h"

#include <fmt/format.h>

#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <thread>

#include "storage/durable_queue.h"
#include "util/log.h"
#include "util/strings.h"

namespace seedance {

namespace {
// Beyond pipeline.shutdown_timeout, for the last steps of a stop (closing connections, the
// final sync of the queue and cursors), as `run` allows at shutdown.
constexpr std::chrono::seconds kStopGrace{3};
// Replaced sources and sinks a pipeline keeps (stopped) before a reload rebuilds it whole.
constexpr size_t kMaxRetired = 32;
}  // namespace

PipelineHost::PipelineHost(const PluginRegistry& registry, observe::MetricsRegistry& metrics,
                           observe::TapHub::Encode encode, std::function<void()> request_reload)
    : registry_(registry),
      metrics_(metrics),
      request_reload_(std::move(request_reload)),
      taps_(metrics, std::move(encode)),
      reloads_ok_(metrics.GetCounter("seedance_reloads_total",
                                     "Configuration reloads (SIGHUP, seedance reload), by result.",
                                     {{"result", "ok"}})),
      reloads_failed_(metrics.GetCounter("seedance_reloads_total", "", {{"result", "failed"}})),
      generation_(metrics.GetGauge("seedance_config_generation",
                                   "The running configuration: 1 at start, one more per reload "
                                   "applied.",
                                   {})) {
  generation_.Set(1);
  listener_loop_.Start();
}

PipelineHost::~PipelineHost() {
  Shutdown();
  listener_loop_.Join();
}

Result<std::unique_ptr<observe::HttpListener>> PipelineHost::StartListener(
    const observe::MetricsSettings& m) {
  return listener_loop_.Call([&]() -> Result<std::unique_ptr<observe::HttpListener>> {
    auto listener = std::make_unique<observe::HttpListener>(
        listener_loop_, metrics_,
        observe::ListenerOptions{.healthy = {},
                                 .taps = &taps_,
                                 .token = m.token,
                                 .request_reload = request_reload_,
                                 .reload_state = [this] { return ReloadState(); }});
    auto port = listener->Start(m.listen);
    if (!port) return port.error();
    return listener;
  });
}

void PipelineHost::StopListener(std::unique_ptr<observe::HttpListener> listener) {
  if (!listener) return;
  // Destroyed on its loop: its connections end there.
  listener_loop_.Call([&] {
    listener->Stop();
    listener.reset();
  });
}

Status PipelineHost::Start(const config::PipelineConfig& config) {
  config_ = config;
  auto pipeline = Pipeline::Create(config, registry_, metrics_,
                                   {.taps = &taps_, .inputs_ended = inputs_ended_});
  if (!pipeline) return pipeline.error();
  pipeline_ = std::move(pipeline).value();
  if (!config.metrics.listen.empty()) {
    auto listener = StartListener(config.metrics);
    if (!listener) return InvalidArgumentError(listener.error().message());
    listener_ = std::move(listener).value();
    SEEDANCE_LOG_INFO("seedance", "metrics on http://{}/metrics", config.metrics.listen);
  }
  return pipeline_->Start();
}

bool PipelineHost::Shutdown() {
  StopListener(std::move(listener_));
  if (!pipeline_) return true;
  const bool clean = pipeline_->Shutdown();
  pipeline_.reset();
  return clean;
}

Status PipelineHost::Record(Status status, const std::vector<std::string>& changes) {
  std::lock_guard<std::mutex> lock(state_mu_);
  last_changes_ = changes;
  if (status.ok()) {
    reloads_ok_.Add();
    last_result_ = "ok";
    last_error_.clear();
    SEEDANCE_LOG_INFO(
        "seedance", "reload done{}",
        changes.empty() ? ": nothing changed" : fmt::format(": {}", fmt::join(changes, ", ")));
  } else {
    reloads_failed_.Add();
    last_result_ = "failed";
    last_error_ = status.message();
    SEEDANCE_LOG_ERROR("seedance", "reload refused, the running configuration stays: {}",
                       status.message());
  }
  return status;
}

Status PipelineHost::Reload(const Result<config::PipelineConfig>& next) {
  if (!next) return Record(next.error(), {});
  const ConfigDiff diff = DiffConfigs(config_, *next);
  if (!diff.refused.empty())
    return Record(Status(StatusCode::kFailedPrecondition, diff.refused), {});
  if (diff.empty()) return Record(Status::Ok(), {});
  // Everything that can fail is tried before anything changes: the new configuration is
  // built as `run` would build it, and a new listen address is bound.
  if (diff.rebuild) {
    auto check = Pipeline::Create(*next, registry_, metrics_, {.validate_only = true});
    if (!check) return Record(check.error(), diff.changes);
  }
  std::unique_ptr<observe::HttpListener> new_listener;
  const bool new_address = diff.listener && next->metrics.listen != config_.metrics.listen;
  if (diff.listener && !next->metrics.listen.empty()) {
    if (new_address) {
      auto listener = StartListener(next->metrics);
      if (!listener) return Record(listener.error(), diff.changes);
      new_listener = std::move(listener).value();
    }
  }
  if (diff.rebuild) {
    // Replaced components stay allocated until the pipeline ends: past kMaxRetired of them,
    // a rebuild lets them go.
    const bool whole = diff.whole || pipeline_->retired() >= kMaxRetired;
    Status s = whole ? Rebuild(*next, diff) : Replace(*next, diff);
    if (!s.ok()) {
      StopListener(std::move(new_listener));
      return Record(s, diff.changes);
    }
  } else if (diff.processor_params) {
    std::vector<std::string> ignored;
    Status s = pipeline_->Reconfigure(*next, &ignored);
    if (!s.ok()) {
      StopListener(std::move(new_listener));
      return Record(s, diff.changes);
    }
  }
  if (diff.listener) {
    if (new_address || next->metrics.listen.empty()) {
      StopListener(std::move(listener_));
      listener_ = std::move(new_listener);
    }
    if (listener_ && !new_address) {
      // Same address, another token: the listener stays (taps stay open).
      listener_loop_.Call([&] { listener_->SetToken(next->metrics.token); });
    }
  }
  if (diff.log_level) {
    util::LogLevel level = util::LogLevel::kInfo;
    if (util::ParseLogLevel(next->log.level, &level)) util::SetLogLevel(level);
  }
  config_ = *next;
  generation_.Add(1);
  return Record(Status::Ok(), diff.changes);
}

void PipelineHost::StopPipeline() {
  // The stop is bounded as at shutdown: a thread that cannot be interrupted (a script with
  // its limits off) must not wedge the process in a reload. Past shutdown_timeout and
  // kStopGrace it exits; what was acknowledged is in the durable queue.
  std::mutex mu;
  std::condition_variable cv;
  bool stopped = false;
  const auto limit = config_.shutdown_timeout + kStopGrace;
  std::thread watchdog([&] {
    std::unique_lock<std::mutex> lock(mu);
    if (!cv.wait_for(lock, limit, [&] { return stopped; })) {
      SEEDANCE_LOG_ERROR("seedance",
                         "reload: the running pipeline did not stop within "
                         "pipeline.shutdown_timeout + {} s; exiting",
                         std::chrono::duration_cast<std::chrono::seconds>(kStopGrace).count());
      std::_Exit(1);
    }
  });
  pipeline_->Shutdown();
  pipeline_.reset();
  {
    std::lock_guard<std::mutex> lock(mu);
    stopped = true;
  }
  cv.notify_all();
  watchdog.join();
}

Status PipelineHost::StartPipeline(const config::PipelineConfig& c,
                                   const std::vector<std::string>& sinks_added) {
  auto made =
      Pipeline::Create(c, registry_, metrics_,
                       {.taps = &taps_, .sinks_added = sinks_added, .inputs_ended = inputs_ended_});
  if (!made) return made.error();
  pipeline_ = std::move(made).value();
  Status s = pipeline_->Start();
  if (!s.ok()) {
    pipeline_->Shutdown();
    pipeline_.reset();
  }
  return s;
}

void PipelineHost::ForgetRemovedSinks(const config::PipelineConfig& next, const ConfigDiff& diff) {
  if (!next.queue.durable) return;
  for (const std::string& sink : diff.sinks.removed) {
    storage::DurableQueue::ForgetCursor(next.queue, sink);
    SEEDANCE_LOG_INFO(sink,
                      "sink removed by the reload: its position in the durable queue is "
                      "dropped (what it had not delivered is not sent anywhere)");
  }
}

Status PipelineHost::RestorePrevious(const config::PipelineConfig& next, const ConfigDiff& diff,
                                     const Status& why) {
  SEEDANCE_LOG_ERROR("seedance",
                     "reload: the new configuration did not start ({}); starting the "
                     "previous configuration again",
                     why.message());
  // Sinks the failed attempt added are not in the previous configuration: their positions go.
  if (next.queue.durable) {
    for (const std::string& sink : diff.sinks.added) {
      storage::DurableQueue::ForgetCursor(next.queue, sink);
    }
  }
  Status back = StartPipeline(config_, {});
  if (!back.ok()) {
    return Status(StatusCode::kInternal,
                  fmt::format("the new pipeline did not start ({}), nor the previous one ({})",
                              why.message(), back.message()));
  }
  return why;
}

Status PipelineHost::Replace(const config::PipelineConfig& next, const ConfigDiff& diff) {
  SEEDANCE_LOG_INFO("seedance", "reload: building again only what changed ({})",
                    fmt::join(diff.changes, ", "));
  const auto began = std::chrono::steady_clock::now();
  Status s = pipeline_->Replace(next, diff);
  if (!s.ok()) {
    StopPipeline();  // part old, part new: rebuilt whole, as it was
    return RestorePrevious(next, diff, s);
  }
  SEEDANCE_LOG_INFO("seedance", "reload: the changed components run, {} ms after the reload began",
                    std::chrono::duration_cast<std::chrono::milliseconds>(
                        std::chrono::steady_clock::now() - began)
                        .count());
  ForgetRemovedSinks(next, diff);
  return s;
}

Status PipelineHost::Rebuild(const config::PipelineConfig& next, const ConfigDiff& diff) {
  SEEDANCE_LOG_INFO("seedance", "reload: rebuilding the pipeline ({})",
                    fmt::join(diff.changes, ", "));
  const auto began = std::chrono::steady_clock::now();
  StopPipeline();
  Status s = StartPipeline(next, diff.sinks.added);
  if (!s.ok()) return RestorePrevious(next, diff, s);
  SEEDANCE_LOG_INFO("seedance",
                    "reload: the new pipeline runs, {} ms after the old one began "
                    "to stop",
                    std::chrono::duration_cast<std::chrono::milliseconds>(
                        std::chrono::steady_clock::now() - began)
                        .count());
  // Only now: had the new pipeline not started, the removed sinks would be back.
  ForgetRemovedSinks(next, diff);
  return s;
}

std::string PipelineHost::ReloadState() const {
  std::lock_guard<std::mutex> lock(state_mu_);
  std::string out = fmt::format(R"({{"generation":{},"reloads":{{"ok":{},"failed":{}}},)",
                                generation_.Value(), reloads_ok_.Value(), reloads_failed_.Value());
  out += R"("last":{"result":)";
  util::AppendJsonString(out, last_result_);
  out += R"(,"changes":[)";
  for (size_t i = 0; i < last_changes_.size(); ++i) {
    if (i > 0) out += ',';
    util::AppendJsonString(out, last_changes_[i]);
  }
  out += R"(],"error":)";
  util::AppendJsonString(out, last_error_);
  out += "}}\n";
  return out;
}

}  // namespace seedance
