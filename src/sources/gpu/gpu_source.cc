#include "sources/gpu/gpu_source.h"

#include <boost/asio/steady_timer.hpp>

#include <algorithm>
#include <deque>
#include <mutex>

#include "observe/component_stats.h"
#include "observe/metrics.h"
#include "seedance/options.h"
#include "seedance/plugin_context.h"
#include "sources/gpu/sampler.h"
#include "util/event_loop.h"
#include "util/log.h"

namespace seedance::sources {
namespace {

using gpu::BackendSettings;
using gpu::GpuSample;

// Samples waiting for room in the pipeline, at most: beyond it the oldest are dropped and
// counted (a reading minutes old is worth less than the newest).
constexpr size_t kMaxPending = 256;

struct GpuSettings {
  BackendSettings backend;
  std::chrono::nanoseconds interval{std::chrono::seconds(1)};
  std::string topic = "gpu/{device}";
  bool fail_when_unavailable = false;
  std::chrono::nanoseconds reopen_interval{std::chrono::minutes(1)};
};

// What the sampler thread hands the event loop: shared so that a post that runs after the
// source stopped finds it still there.
struct Handoff {
  std::mutex mu;
  std::deque<GpuSample> pending;
  bool drain_posted = false;
  bool stopped = false;
};

class GpuSource final : public Source {
 public:
  GpuSource(GpuSettings settings, PluginContext ctx)
      : settings_(std::move(settings)),
        ctx_(std::move(ctx)),
        handoff_(std::make_shared<Handoff>()),
        labels_{{"component", ctx_.name}},
        available_(ctx_.metrics->GetGauge("seedance_gpu_available",
                                          "1 while the gpu source reads a GPU, 0 while it cannot "
                                          "(no driver, no device).",
                                          labels_)),
        stalled_(ctx_.metrics->GetGauge("seedance_gpu_stalled",
                                        "1 while a GPU reading has not returned for longer than "
                                        "3 intervals (at least 3 s): a wedged driver call.",
                                        labels_)),
        missed_overrun_(Missed("overrun")),
        missed_backpressure_(Missed("backpressure")),
        watchdog_(ctx_.loop->io()) {}

  ~GpuSource() override { Stop(); }

  Status Start(SourceOutput& output) override {
    output_ = &output;
    std::unique_ptr<gpu::GpuBackend> opened;
    if (settings_.fail_when_unavailable) {  // on_unavailable: fail: decided before running
      Result<std::unique_ptr<gpu::GpuBackend>> r = gpu::OpenBackend(settings_.backend);
      if (!r.has_value()) return FailedPreconditionError("no GPU to read: " + r.error().message());
      opened = std::move(r).value();
      Opened(opened->name());
    }
    sampler_ = std::make_unique<gpu::Sampler>(
        [s = settings_.backend] { return gpu::OpenBackend(s); }, settings_.interval,
        settings_.reopen_interval, ctx_.now_ns,
        gpu::Sampler::Callbacks{
            .on_samples = [this](std::vector<GpuSample>&& samples) { Hand(std::move(samples)); },
            .on_open =
                [this](const Status& st, std::string_view backend) {
                  if (st.ok()) {
                    Opened(backend);
                  } else {
                    available_.Set(0);
                    util::Log(
                        util::LogLevel::kWarn, ctx_.name,
                        "no GPU to read ({}); the source is unavailable, the rest of the "
                        "pipeline runs; trying again every {} s",
                        st.message(),
                        std::chrono::duration_cast<std::chrono::seconds>(settings_.reopen_interval)
                            .count());
                  }
                },
            .on_notice =
                [this](gpu::GpuBackend::Notice&& n) {
                  util::Log(n.warning ? util::LogLevel::kWarn : util::LogLevel::kInfo, ctx_.name,
                            "{}", n.text);
                }});
    sampler_->Start(std::move(opened));
    Watch();
    return Status::Ok();
  }

  void Stop() override {
    if (stopped_) return;
    stopped_ = true;
    watchdog_.cancel();
    if (sampler_ != nullptr && !sampler_->Stop()) {
      util::Log(
          util::LogLevel::kWarn, ctx_.name,
          "a GPU driver call has not returned for {} s; its thread is left to end on its own",
          std::chrono::duration_cast<std::chrono::seconds>(sampler_->SinceLastRound()).count());
    }
    std::lock_guard<std::mutex> lock(handoff_->mu);
    handoff_->stopped = true;
  }

 private:
  observe::Counter& Missed(const char* reason) {
    observe::Labels l = labels_;
    l.emplace_back("reason", reason);
    return ctx_.metrics->GetCounter(
        "seedance_gpu_samples_missed_total",
        "GPU readings not taken (overrun: a reading outlasted its period) or dropped before "
        "the pipeline took them (backpressure).",
        l);
  }

  // On the loop, every second: a round that has not ended for longer than stall_after() is a
  // driver call that does not return (NVML can block for minutes on a wedged GPU). Said once
  // when it starts and once when readings resume; readings cannot be taken meanwhile, and the
  // device's events stop, so the metric and the log are what tell.
  void Watch() {
    watchdog_.expires_after(std::chrono::seconds(1));
    watchdog_.async_wait([this](boost::system::error_code ec) {
      if (ec || stopped_) return;
      const auto silent = sampler_->SinceLastRound();
      const bool stalled = silent > StallAfter();
      if (stalled != stalled_now_) {
        stalled_now_ = stalled;
        stalled_.Set(stalled ? 1 : 0);
        if (stalled) {
          util::Log(util::LogLevel::kWarn, ctx_.name,
                    "no GPU reading for {} s: a driver call has not returned (a wedged GPU?)",
                    std::chrono::duration_cast<std::chrono::seconds>(silent).count());
        } else {
          util::Log(util::LogLevel::kWarn, ctx_.name, "GPU readings resumed");
        }
      }
      Watch();
    });
  }
  std::chrono::steady_clock::duration StallAfter() const {
    return std::max<std::chrono::steady_clock::duration>(std::chrono::seconds(3),
                                                         3 * settings_.interval);
  }

  void Opened(std::string_view backend) {
    available_.Set(1);
    util::Log(util::LogLevel::kInfo, ctx_.name, "reading GPUs through {} every {} ms", backend,
              std::chrono::duration_cast<std::chrono::milliseconds>(settings_.interval).count());
  }

  // On the sampler thread: queue the round and wake the loop.
  void Hand(std::vector<GpuSample>&& samples) {
    missed_overrun_.Add(sampler_->missed() - overruns_seen_);
    overruns_seen_ = sampler_->missed();
    bool post = false;
    {
      std::lock_guard<std::mutex> lock(handoff_->mu);
      if (handoff_->stopped) return;
      for (GpuSample& s : samples) {
        if (handoff_->pending.size() == kMaxPending) {
          handoff_->pending.pop_front();
          missed_backpressure_.Add();
        }
        handoff_->pending.push_back(std::move(s));
      }
      post = !handoff_->drain_posted;
      handoff_->drain_posted = true;
    }
    if (post) {
      ctx_.loop->Post([this, h = handoff_] {
        {
          std::lock_guard<std::mutex> lock(h->mu);
          h->drain_posted = false;
          if (h->stopped) return;
        }
        Drain();
      });
    }
  }

  // On the loop: emit what is pending until the pipeline refuses.
  void Drain() {
    while (true) {
      GpuSample s;
      {
        std::lock_guard<std::mutex> lock(handoff_->mu);
        if (handoff_->stopped || handoff_->pending.empty()) return;
        s = std::move(handoff_->pending.front());
        handoff_->pending.pop_front();
      }
      Event e = output_->TakeEvent();
      e.source = ctx_.name;
      e.topic = Topic(s);
      e.format = PayloadFormat::kJson;
      e.event_time_ns = s.time_ns;
      e.ingest_time_ns = ctx_.now_ns();
      e.payload = gpu::SampleJson(s);
      DeviceLost(s).Set(s.state == "lost" ? 1 : 0);
      if (!output_->TryEmit(e, AckHandle{})) {
        std::lock_guard<std::mutex> lock(handoff_->mu);
        handoff_->pending.push_front(std::move(s));
        if (!waiting_) {
          waiting_ = true;
          output_->WhenWritable([this, h = handoff_] {
            waiting_ = false;
            if (!h->stopped) Drain();
          });
        }
        return;
      }
      ctx_.stats->events_in.Add();
      ctx_.stats->events_out.Add();
    }
  }

  std::string Topic(const GpuSample& s) const {
    std::string t = settings_.topic;
    for (size_t pos = t.find("{device}"); pos != std::string::npos; pos = t.find("{device}")) {
      t.replace(pos, 8, std::to_string(s.index));
    }
    for (size_t pos = t.find("{uuid}"); pos != std::string::npos; pos = t.find("{uuid}")) {
      t.replace(pos, 6, s.uuid);
    }
    return t;
  }

  observe::Gauge& DeviceLost(const GpuSample& s) {
    auto it = lost_.find(s.index);
    if (it != lost_.end()) return *it->second;
    observe::Labels l = labels_;
    l.emplace_back("device", std::to_string(s.index));
    observe::Gauge& g =
        ctx_.metrics->GetGauge("seedance_gpu_device_lost",
                               "1 while a GPU does not answer (fallen off the bus, reset "
                               "needed).",
                               l);
    lost_.emplace(s.index, &g);
    return g;
  }

  GpuSettings settings_;
  PluginContext ctx_;
  std::shared_ptr<Handoff> handoff_;
  observe::Labels labels_;
  observe::Gauge& available_;
  observe::Gauge& stalled_;
  observe::Counter& missed_overrun_;
  observe::Counter& missed_backpressure_;
  uint64_t overruns_seen_ = 0;  // sampler thread only
  std::unique_ptr<gpu::Sampler> sampler_;
  boost::asio::steady_timer watchdog_;
  bool stalled_now_ = false;
  bool stopped_ = false;
  SourceOutput* output_ = nullptr;
  bool waiting_ = false;
  std::map<int, observe::Gauge*> lost_;
};

const Options<GpuSettings>& GpuSchema() {
  using S = GpuSettings;
  using B = BackendSettings;
  static const Options<B> backend =
      Options<B>()
          .Enum(&B::backend,
                {.name = "backend",
                 .doc = "nvml (discrete and data-centre GPUs), jetson (sysfs on Jetson modules), "
                        "or auto: NVML, then Jetson",
                 .default_value = "auto"},
                {{"auto", "auto"}, {"nvml", "nvml"}, {"jetson", "jetson"}})
          .Add(&B::nvml_library,
               {.name = "nvml_library",
                .doc = "the NVML library, loaded when the source starts (a name the loader "
                       "finds, or a path)",
                .default_value = "libnvidia-ml.so.1"})
          .Add(&B::sysfs_root, {.name = "sysfs_root",
                                .doc = "jetson: the directory holding sys/ and proc/",
                                .default_value = "/"})
          .Add(&B::devices,
               {.name = "devices", .doc = "GPUs to read, by index or UUID; unset: every GPU"})
          .Add(&B::processes, {.name = "processes",
                               .doc = "list the processes on each GPU with their memory (nvml)",
                               .default_value = "true"})
          .Add(&B::gpm, {.name = "gpm",
                         .doc = "GPM metrics (SM utilisation and occupancy, DRAM bandwidth, "
                                "PCIe) where the GPU has them (Hopper and later)",
                         .default_value = "true"});
  static const Options<S> o =
      Options<S>()
          .Include(&S::backend, backend)
          .Add(&S::interval,
               {.name = "interval",
                .doc = "one reading of every GPU per interval (at least 200ms)",
                .default_value = "1s",
                .validator =
                    [](const ParamValue& v) {
                      if (std::get<std::chrono::nanoseconds>(v) >= std::chrono::milliseconds(200)) {
                        return Status::Ok();
                      }
                      return InvalidArgumentError("must be at least 200ms");
                    }})
          .Add(&S::topic, {.name = "topic",
                           .doc = "topic of the events; {device} is the GPU's index, {uuid} its "
                                  "UUID",
                           .default_value = "gpu/{device}"})
          .Enum(&S::fail_when_unavailable,
                {.name = "on_unavailable",
                 .doc = "without a driver or GPU at start: warn (log it once, count it in "
                        "seedance_gpu_available, run the rest, try again every minute) or fail "
                        "(exit at start)",
                 .default_value = "warn"},
                {{"warn", false}, {"fail", true}});
  return o;
}

}  // namespace

SourceFactory GpuSourceFactory() {
  SourceFactory f;
  f.info.type = "gpu";
  f.info.kind = PluginKind::kSource;
  f.info.summary =
      "Reads GPU telemetry (memory, processes, utilisation, power, clocks, PCIe, GPM) through "
      "NVML loaded at run time, or sysfs on Jetson.";
  f.info.params = GpuSchema().Specs();
  f.create = [](const Params& p, PluginContext& ctx) -> Result<std::unique_ptr<Source>> {
    SEEDANCE_ASSIGN_OR_RETURN(GpuSettings s, GpuSchema().Bind(p));
    return std::unique_ptr<Source>(new GpuSource(std::move(s), ctx));
  };
  return f;
}

}  // namespace seedance::sources
