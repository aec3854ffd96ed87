// PipelineHost: what `seedance run` keeps for the life of the process — the running pipeline,
// the metrics listener (on an event loop of its own, so it and its taps outlive the pipeline),
// the taps — and the whole-config reload (SIGHUP, `seedance reload`).
//
// Reload(next), with ConfigDiff (core/config_diff.h) deciding what it takes:
// - a file that does not load, a change a reload cannot make, or a new configuration that
//   fails to build as `run` would build it (plugins checked, scripts compiled): refused, the
//   running pipeline untouched;
// - processors' parameters only: taken in place between two batches, state kept;
// - sources and sinks (durable buffers for sinks): only those added, changed or removed are
//   built again (Pipeline::Replace); the others run on, their connections and positions
//   untouched. A changed sink resumes from its position (nothing lost, nothing sent twice
//   beyond at-least-once's attempts in flight); an added sink starts at the queue's end; a
//   removed sink's position is dropped, and logged; a changed source connects and subscribes
//   again. Should a new component fail to start, the previous configuration is rebuilt whole;
// - queue and memory limits, the pipeline section, reordered components, sinks on memory
//   buffers: the pipeline is rebuilt in the process. The running one stops as at shutdown (sources
//   first; what was taken in is committed; sinks finish or leave their events in the durable
//   queue), then the new one starts on the same queue: a sink that keeps its name resumes from its
//   position (nothing lost, nothing sent twice beyond at-least-once's attempts in flight); an added
//   sink starts at the queue's end; a removed sink's position is dropped, and logged. Sources
//   connect again (MQTT QoS 1/2 sessions are persistent: the broker keeps what arrives meanwhile).
//   The stop is bounded as at shutdown: past pipeline.shutdown_timeout + 3 s (a wedged thread) the
//   process exits 1 for its supervisor to restart it; nothing acknowledged is lost. Should the new
//   pipeline fail to start (a port taken, a sink that cannot start), the previous
//   configuration is started again and the reload reported failed;
// - metrics.listen / token: a new listener is bound before anything else changes (a taken
//   port refuses the reload), then the old one closed; log.level: at once.
// Counted in seedance_reloads_total{result="ok"|"failed"}; seedance_config_generation goes up
// with each applied reload. The last outcome is ReloadState() (GET /reload).
//
// Start, Reload and Shutdown from one thread (the main thread); ReloadState from any.
#pragma once

#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "config/config.h"
#include "core/config_diff.h"
#include "core/pipeline.h"
#include "observe/http_listener.h"
#include "observe/metrics.h"
#include "observe/tap_hub.h"
#include "seedance/plugin_registry.h"
#include "util/event_loop.h"

namespace seedance {

class PipelineHost {
 public:
  // `encode` writes a tapped event (the sinks' envelope). `request_reload` is what POST
  // /reload calls (the main thread then calls Reload).
  PipelineHost(const PluginRegistry& registry, observe::MetricsRegistry& metrics,
               observe::TapHub::Encode encode, std::function<void()> request_reload);
  ~PipelineHost();

  // Called (on the pipeline's event loop) once every source's input has ended
  // (PipelineOptions::inputs_ended). Set before Start.
  void OnInputsEnded(std::function<void()> f) { inputs_ended_ = std::move(f); }
  // Creates and starts the pipeline and the listener. kInvalidArgument / kNotFound for a
  // configuration problem, others at run time.
  Status Start(const config::PipelineConfig& config);
  // `next`: the configuration file loaded again, or why it could not be.
  Status Reload(const Result<config::PipelineConfig>& next);
  // Graceful stop; true when everything accepted was delivered in time (Pipeline::Shutdown).
  bool Shutdown();

  // {"generation":N,"reloads":{"ok":A,"failed":B},"last":{"result":...,"changes":[...],
  // "error":"..."}}
  std::string ReloadState() const;
  const config::PipelineConfig& config() const { return config_; }

 private:
  Result<std::unique_ptr<observe::HttpListener>> StartListener(const observe::MetricsSettings& m);
  void StopListener(std::unique_ptr<observe::HttpListener> listener);
  // Stops the running pipeline and starts one of `next`; on failure starts `config_` again.
  Status Rebuild(const config::PipelineConfig& next, const ConfigDiff& diff);
  // Builds again only the sources and sinks that changed (Pipeline::Replace); on failure
  // rebuilds `config_` whole.
  Status Replace(const config::PipelineConfig& next, const ConfigDiff& diff);
  // The running pipeline stops as at shutdown, bounded (past it the process exits 1).
  void StopPipeline();
  Status StartPipeline(const config::PipelineConfig& c,
                       const std::vector<std::string>& sinks_added);
  // After `next` failed to start (`why`): starts `config_` again.
  Status RestorePrevious(const config::PipelineConfig& next, const ConfigDiff& diff,
                         const Status& why);
  void ForgetRemovedSinks(const config::PipelineConfig& next, const ConfigDiff& diff);
  Status Record(Status status, const std::vector<std::string>& changes);

  const PluginRegistry& registry_;
  observe::MetricsRegistry& metrics_;
  std::function<void()> request_reload_;
  std::function<void()> inputs_ended_;
  observe::TapHub taps_;
  EventLoop listener_loop_;
  std::unique_ptr<observe::HttpListener> listener_;
  std::unique_ptr<Pipeline> pipeline_;
  config::PipelineConfig config_;
  observe::Counter& reloads_ok_;
  observe::Counter& reloads_failed_;
  observe::Gauge& generation_;
  mutable std::mutex state_mu_;
  std::string last_result_ = "none";
  std::vector<std::string> last_changes_;
  std::string last_error_;
};

}  // namespace seedance
