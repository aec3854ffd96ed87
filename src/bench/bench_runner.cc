#include "bench/bench_runner.h"

#include <unistd.h>

#include <fmt/format.h>

#include <atomic>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <thread>

#include "bench/bench_job.h"
#include "bench/delivery_recorder.h"
#include "bench/mqtt_publisher.h"
#include "bench/receivers.h"
#include "bench/report.h"
#include "bench/seedance_child.h"
#include "bench/svg_plot.h"
#include "config/config.h"
#include "plugins/builtin_plugins.h"

namespace seedance::bench {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

std::string Substitute(std::string text, uint64_t seq, int64_t now_ns) {
  auto replace = [&](std::string_view from, const std::string& to) {
    for (size_t p = text.find(from); p != std::string::npos; p = text.find(from, p + to.size())) {
      text.replace(p, from.size(), to);
    }
  };
  replace("{n}", std::to_string(seq));
  replace("{now_ns}", std::to_string(now_ns));
  return text;
}

std::string LogTail(const std::string& path) {
  std::ifstream in(path);
  std::string all((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (all.size() > 2000) all = "..." + all.substr(all.size() - 2000);
  return all;
}

class Run {
 public:
  Run(const BenchOptions& options, const config::PipelineConfig& config, int index)
      : options_(options), config_(config), index_(index) {}

  Result<RunFigures> Execute(ReportContext* context) {
    char pattern[] = "/tmp/seedance-bench-XXXXXX";
    if (mkdtemp(pattern) == nullptr) {
      return Status(StatusCode::kUnavailable, "cannot create a work directory in /tmp");
    }
    workdir_ = pattern;
    Result<RunFigures> result = ExecuteIn(context);
    if (!options_.keep_workdir && result) {
      std::error_code ec;
      fs::remove_all(workdir_, ec);
    } else {
      std::fprintf(stderr, "bench: work directory kept: %s\n", workdir_.c_str());
    }
    return result;
  }

 private:
  Result<RunFigures> ExecuteIn(ReportContext* context) {
    HttpStampReceiver receiver(recorder_);
    SEEDANCE_ASSIGN_OR_RETURN(std::string receiver_url, receiver.Start());
    BenchJobOptions job_options{
        .config_path = options_.config_path,
        .broker_uri = options_.broker_uri,
        .payload_template = options_.payload,
        .receiver_url = receiver_url,
        .workdir = workdir_,
        .count = options_.count,
        .rate = options_.rate,
        .generator_delay = std::chrono::seconds(1),
    };
    SEEDANCE_ASSIGN_OR_RETURN(BenchJob job, MakeBenchJob(config_, job_options));
    context->load =
        job.mqtt ? fmt::format("mqtt {}:{} topic {} qos {}", job.host, job.port, job.topic, job.qos)
                 : "generate source (built-in generator)";
    const std::string job_path = workdir_ + "/job.yaml";
    std::ofstream(job_path) << job.yaml;
    std::vector<std::unique_ptr<FileStampTailer>> tailers;
    for (const auto& path : job.tail_files) {
      tailers.push_back(std::make_unique<FileStampTailer>(recorder_, path));
      tailers.back()->Start();
    }

    std::vector<std::string> args{"run", "--config", job_path, "--log-level", "warn"};
    if (!options_.filter_path.empty()) {
      args.push_back("--filter");
      args.push_back(fs::absolute(options_.filter_path).string());
    }
    const std::string log_path = workdir_ + "/seedance.log";
    SEEDANCE_ASSIGN_OR_RETURN(
        auto child, SeedanceChild::Spawn(options_.seedance_exe, args, workdir_, log_path));
    RunFigures figures;
    auto ready = child->WaitReady(std::chrono::seconds(30));
    if (!ready) {
      return Status(StatusCode::kUnavailable,
                    ready.error().message() + "; its log:\n" + LogTail(log_path));
    }
    figures.ready_ms = *ready;
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    figures.rss_idle_kb = child->RssKb();

    // Load.
    std::atomic<bool> stop{false};
    std::atomic<bool> load_done{!job.mqtt};
    std::unique_ptr<MqttPublisher> publisher;
    std::thread load_thread;
    Status load_status;
    if (job.mqtt) {
      PublisherOptions po{.host = job.host,
                          .port = std::to_string(job.port),
                          .username = job.username,
                          .password = job.password,
                          .topic = job.topic,
                          .qos = job.qos,
                          .rate = options_.rate,
                          .count = options_.count,
                          .duration = options_.duration};
      po.make_payload = [tmpl = job.payload_template](uint64_t seq, int64_t now_ns) {
        return Substitute(tmpl, seq, now_ns);
      };
      auto connected = MqttPublisher::Connect(po);
      if (!connected) return connected.error();
      publisher = std::move(*connected);
      load_thread = std::thread([&] {
        auto r = publisher->Run(stop);
        if (!r) load_status = r.error();
        load_done = true;
      });
    }
    auto events_in = [&]() -> uint64_t {
      return job.mqtt ? (job.qos > 0 ? publisher->acked() : publisher->published())
                      : options_.count;
    };

    const auto load_start = Clock::now();
    const auto hard_end =
        load_start + (options_.duration.count() > 0 ? options_.duration : std::chrono::hours(24)) +
        options_.drain_timeout;
    auto last_progress_at = Clock::now();
    uint64_t last_unique = 0;
    auto next_point = load_start + options_.interval;
    auto next_line = Clock::now();
    while (true) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
      const auto now = Clock::now();
      const uint64_t unique = recorder_.unique();
      if (unique != last_unique) {
        last_unique = unique;
        last_progress_at = now;
      }
      if (now >= next_point) {
        AddPoint(figures, *child, events_in(), unique,
                 std::chrono::duration<double>(now - load_start).count());
        next_point += options_.interval;
      }
      if (options_.progress && now >= next_line) {
        std::fprintf(stderr, "\r[run %d/%d] %s %llu  delivered %llu  rss %.1f MB   ", index_ + 1,
                     options_.repeat, job.mqtt ? "published" : "generating",
                     static_cast<unsigned long long>(events_in()),
                     static_cast<unsigned long long>(unique), child->RssKb() / 1024.0);
        next_line = now + std::chrono::milliseconds(250);
      }
      if (child->RssKb() == 0) break;  // the pipeline died
      const bool loaded = load_done.load();
      if (loaded && job.mqtt && unique >= events_in()) break;
      if (!job.mqtt && options_.count > 0 && unique >= options_.count) break;
      if (loaded && now - last_progress_at >= options_.settle &&
          now - load_start >= std::chrono::seconds(2)) {
        break;
      }
      if (now >= hard_end) break;
      if (!job.mqtt && options_.duration.count() > 0 && options_.count == 0 &&
          now - load_start >= options_.duration) {
        break;
      }
    }
    stop = true;
    if (load_thread.joinable()) load_thread.join();
    if (options_.progress) std::fprintf(stderr, "\n");
    AddPoint(figures, *child, events_in(), recorder_.unique(),
             std::chrono::duration<double>(Clock::now() - load_start).count());
    const bool died = child->RssKb() == 0;
    SeedanceChild::Exit exit = child->Stop(std::chrono::seconds(10));
    for (auto& t : tailers) t->Stop();
    receiver.Stop();
    if (died) {
      return Status(StatusCode::kUnavailable,
                    "the pipeline exited during the run; its log:\n" + LogTail(log_path));
    }
    if (!load_status.ok()) return load_status;

    figures.events_in = events_in();
    figures.events_out = recorder_.unique();
    figures.duplicates = recorder_.duplicates();
    figures.cpu_s = exit.cpu_s;
    // The kernel's high-water mark and a VmRSS sample are counted apart (per-thread counters
    // folded in lazily): the peak is at least what was seen idle (CI saw 7220 kB idle against
    // a 7208 kB peak).
    figures.rss_peak_kb = std::max<int64_t>(exit.max_rss_kb, figures.rss_idle_kb);
    std::vector<double> all = recorder_.AllLatenciesMs();
    figures.p50_ms = Percentile(all, 0.50);
    figures.p95_ms = Percentile(all, 0.95);
    figures.p99_ms = Percentile(all, 0.99);
    figures.max_ms = all.empty() ? 0 : all.back();
    const int64_t first_ns = recorder_.first_sent_ns();
    const int64_t last_ns = recorder_.last_received_ns();
    figures.duration_s = last_ns > first_ns ? static_cast<double>(last_ns - first_ns) / 1e9 : 0;
    figures.throughput_eps =
        figures.duration_s > 0 ? static_cast<double>(figures.events_out) / figures.duration_s : 0;
    if (figures.events_out == 0) {
      return Status(StatusCode::kUnavailable,
                    "nothing was delivered: does the filter keep the bench's events (payload "
                    "fields bench_seq and bench_ns must reach the sink)? The pipeline's log:\n" +
                        LogTail(log_path));
    }
    if (figures.events_out < figures.events_in) {
      std::fprintf(stderr,
                   "bench: run %d: %llu of %llu generated events were not delivered (dropped by "
                   "the filter, or lost before Seedance: a broker drops messages beyond its "
                   "queue limit, e.g. mosquitto's max_queued_messages)\n",
                   index_ + 1,
                   static_cast<unsigned long long>(figures.events_in - figures.events_out),
                   static_cast<unsigned long long>(figures.events_in));
    }
    return figures;
  }

  void AddPoint(RunFigures& figures, const SeedanceChild& child, uint64_t in, uint64_t out,
                double t_s) {
    std::vector<double> interval = recorder_.TakeInterval();
    TimelinePoint p;
    p.t_s = t_s;
    p.rss_kb = child.RssKb();
    p.events_in = in;
    p.events_out = out;
    p.latency_buckets = BucketCounts(interval);
    p.p50_ms = Percentile(interval, 0.50);
    p.p99_ms = Percentile(interval, 0.99);
    figures.timeline.push_back(std::move(p));
  }

  const BenchOptions& options_;
  const config::PipelineConfig& config_;
  int index_;
  std::string workdir_;
  DeliveryRecorder recorder_;
};

}  // namespace

Result<std::string> RunBench(const BenchOptions& requested) {
  BenchOptions options = requested;
  if (options.count == 0 && options.duration.count() == 0) {
    return Status(StatusCode::kInvalidArgument, "give --count or --duration");
  }
  if (options.repeat < 1) {
    return Status(StatusCode::kInvalidArgument, "--repeat must be at least 1");
  }
  PluginRegistry registry;
  RegisterBuiltinPlugins(registry);
  SEEDANCE_ASSIGN_OR_RETURN(config::PipelineConfig config,
                            config::LoadConfigFile(options.config_path, registry));
  const bool generator = std::none_of(config.sources.begin(), config.sources.end(),
                                      [](const auto& s) { return s.type == "mqtt"; });
  if (generator && options.count == 0 && options.rate > 0) {
    options.count = static_cast<uint64_t>(options.rate *
                                          std::chrono::duration<double>(options.duration).count());
  }
  if (generator && options.count == 0) {
    return Status(StatusCode::kInvalidArgument,
                  "with the built-in generator (no mqtt source), give --count, or --rate with "
                  "--duration");
  }
  ReportContext context{.config = options.config_path,
                        .filter = options.filter_path,
                        .rate = options.rate,
                        .count = options.count,
                        .duration_s = std::chrono::duration<double>(options.duration).count(),
                        .interval_s = std::chrono::duration<double>(options.interval).count()};
  std::vector<RunFigures> runs;
  for (int i = 0; i < options.repeat; ++i) {
    Run run(options, config, i);
    SEEDANCE_ASSIGN_OR_RETURN(RunFigures figures, run.Execute(&context));
    runs.push_back(std::move(figures));
  }
  if (!options.svg_path.empty()) {
    std::ofstream svg(options.svg_path);
    svg << TimelineSvg(runs.front().timeline,
                       fmt::format("seedance bench: {} (run 1 of {})",
                                   fs::path(options.config_path).filename().string(), runs.size()));
    if (!svg) {
      return Status(StatusCode::kUnavailable, "cannot write " + options.svg_path);
    }
  }
  return ReportJson(context, runs);
}

}  // namespace seedance::bench
