// `seedance gpu sample`: an nvidia-smi-style sampler for benchmarks. The gpu source's backends
// and sampler, without a pipeline: NDJSON lines (one per GPU per interval), a summary of the
// sampling itself (periods, missed readings, its own CPU), and an SVG of memory per process,
// utilisation and PCIe over time.
#include <fmt/format.h>
#include <sys/resource.h>

#include <pthread.h>
#include <signal.h>
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <map>
#include <mutex>

#include "bench/report.h"
#include "bench/svg_plot.h"
#include "main/commands.h"
#include "sources/gpu/sampler.h"
#include "util/units.h"

namespace seedance::cli {
namespace {

using sources::gpu::GpuSample;

double CpuSeconds() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
         static_cast<double>(u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1e6;
}

// bench's nearest-rank percentile; NaN (written as null) when there is no value.
double Percentile(std::vector<double> v, double q) {
  return v.empty() ? NAN : bench::Percentile(v, q);
}

// What the SVG draws of each reading (bounded: kMaxRows readings).
enum Plotted { kUsedMib, kGpuUtil, kMemUtil, kSmUtil, kTxMbs, kRxMbs, kPlotted };
struct Plot {
  std::string_view field;
  double scale;
  const char* label;
  int panel;  // 0 memory, 1 utilisation, 2 PCIe
};
constexpr Plot kPlots[kPlotted] = {
    {"memory_used_bytes", 1.0 / 1048576, "used", 0},
    {"gpu_util_pct", 1, "gpu", 1},
    {"memory_util_pct", 1, "memory", 1},
    {"gpm_sm_util_pct", 1, "SM (GPM)", 1},
    {"pcie_tx_bytes_per_s", 1e-6, "TX", 2},
    {"pcie_rx_bytes_per_s", 1e-6, "RX", 2},
};
struct Row {
  double t_s;
  int device;
  double values[kPlotted];
  std::vector<std::pair<uint32_t, double>> processes;  // pid, MiB
};
constexpr size_t kMaxRows = 200000;
constexpr size_t kProcessesDrawn = 6;  // per device: those with the highest peaks

Row MakeRow(const GpuSample& s, double t_s) {
  Row r{t_s, s.index, {}, {}};
  for (int i = 0; i < kPlotted; ++i) {
    const auto* f = s.Find(kPlots[i].field);
    r.values[i] = f == nullptr ? NAN : f->value * kPlots[i].scale;
  }
  for (const auto& p : s.processes) {
    if (p.used_bytes >= 0) r.processes.emplace_back(p.pid, p.used_bytes / 1048576.0);
  }
  return r;
}

std::string Svg(const std::vector<Row>& rows, const std::map<uint32_t, std::string>& names,
                int devices) {
  // x: the rounds of the first device; other devices' readings by round index.
  std::map<int, std::vector<const Row*>> by_device;
  for (const Row& r : rows) by_device[r.device].push_back(&r);
  std::vector<double> x;
  size_t n = 0;
  for (const auto& entry : by_device) n = std::max(n, entry.second.size());
  for (size_t i = 0; i < n; ++i) {
    const auto& first = by_device.begin()->second;
    x.push_back(i < first.size() ? first[i]->t_s : x.back());
  }
  static const char* kColors[] = {"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd",
                                  "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"};
  std::vector<bench::SvgPanel> panels = {
      {"memory (MiB)", {}}, {"utilisation (%)", {}}, {"PCIe (MB/s)", {}}};
  size_t color = 0;
  for (const auto& [device, list] : by_device) {
    const std::string prefix = devices > 1 ? fmt::format("gpu{} ", device) : "";
    auto add = [&](int panel, std::string name) -> std::vector<double>& {
      panels[panel].series.push_back(
          {std::move(name), kColors[color++ % std::size(kColors)], std::vector<double>(n, NAN)});
      return panels[panel].series.back().values;
    };
    for (int p = 0; p < kPlotted; ++p) {
      std::vector<double>& v = add(kPlots[p].panel, prefix + kPlots[p].label);
      for (size_t i = 0; i < list.size(); ++i) v[i] = list[i]->values[p];
    }
    std::map<uint32_t, double> peak;
    for (const Row* r : list) {
      for (const auto& [pid, mib] : r->processes) peak[pid] = std::max(peak[pid], mib);
    }
    std::vector<std::pair<double, uint32_t>> top;
    for (const auto& [pid, mib] : peak) top.emplace_back(mib, pid);
    std::sort(top.rbegin(), top.rend());
    if (top.size() > kProcessesDrawn) top.resize(kProcessesDrawn);
    for (const auto& entry : top) {
      const uint32_t pid = entry.second;
      auto name = names.find(pid);
      std::vector<double>& v =
          add(0, prefix + fmt::format("{} {}", name == names.end() ? "pid" : name->second, pid));
      for (size_t i = 0; i < list.size(); ++i) {
        for (const auto& [q, mib] : list[i]->processes) {
          if (q == pid) v[i] = mib;
        }
      }
    }
  }
  return bench::LineChartSvg("GPU memory, utilisation and PCIe", "time since start (s)", x, panels);
}

}  // namespace

int GpuSampleCommand(const GpuSampleOptions& o) {
  auto interval = util::ParseDuration(o.interval);
  auto duration = util::ParseDuration(o.duration);
  if (!interval || !duration) {
    std::cerr << "gpu sample: " << (!interval ? interval.error() : duration.error()).message()
              << "\n";
    return kExitConfig;
  }
  if (*interval < std::chrono::milliseconds(10)) {
    std::cerr << "gpu sample: --interval must be at least 10ms\n";
    return kExitConfig;
  }
  if (o.backend != "auto" && o.backend != "nvml" && o.backend != "jetson") {
    std::cerr << "gpu sample: --backend must be auto, nvml or jetson\n";
    return kExitConfig;
  }
  std::vector<uint32_t> pids;
  for (const std::string& p : o.pids) {
    char* end = nullptr;
    unsigned long pid = std::strtoul(p.c_str(), &end, 10);
    if (p.empty() || *end != '\0' || pid > UINT32_MAX) {
      std::cerr << "gpu sample: --pid \"" << p << "\" is not a process id\n";
      return kExitConfig;
    }
    pids.push_back(static_cast<uint32_t>(pid));
  }
  sources::gpu::BackendSettings settings;
  settings.backend = o.backend;
  settings.nvml_library = o.nvml_library;
  settings.sysfs_root = o.sysfs_root;
  settings.devices = o.devices;
  auto backend = sources::gpu::OpenBackend(settings);
  if (!backend) {
    std::cerr << "gpu sample: no GPU to read: " << backend.error().message() << "\n";
    return kExitRuntime;
  }
  FILE* out = stdout;
  if (!o.out_path.empty() && o.out_path != "-") {
    out = std::fopen(o.out_path.c_str(), "we");
    if (out == nullptr) {
      std::cerr << "gpu sample: cannot write " << o.out_path << "\n";
      return kExitRuntime;
    }
  }

  std::mutex mu;
  std::vector<Row> rows;
  std::map<uint32_t, std::string> names;
  std::vector<double> periods_ms;
  int64_t first_ns = 0, last_round_ns = 0;
  int devices = 0;
  uint64_t readings = 0;
  auto now_ns = [] {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(
               std::chrono::system_clock::now().time_since_epoch())
        .count();
  };
  const double cpu_before = CpuSeconds();
  const auto wall_before = std::chrono::steady_clock::now();
  sources::gpu::Sampler sampler(
      [] { return Result<std::unique_ptr<sources::gpu::GpuBackend>>(NotFoundError("unused")); },
      *interval, std::chrono::minutes(1), now_ns,
      {.on_samples =
           [&](std::vector<GpuSample>&& samples) {
             std::lock_guard<std::mutex> lock(mu);
             if (samples.empty()) return;
             int64_t t = samples.front().time_ns;
             if (first_ns == 0) first_ns = t;
             if (last_round_ns != 0)
               periods_ms.push_back(static_cast<double>(t - last_round_ns) / 1e6);
             last_round_ns = t;
             for (GpuSample& s : samples) {
               if (!pids.empty()) {
                 std::erase_if(s.processes, [&](const auto& p) {
                   return std::find(pids.begin(), pids.end(), p.pid) == pids.end();
                 });
               }
               std::string line = sources::gpu::SampleJson(s, /*with_time=*/true);
               line += '\n';
               std::fwrite(line.data(), 1, line.size(), out);
               ++readings;
               devices = std::max(devices, s.index + 1);
               if (o.svg_path.empty() || rows.size() >= kMaxRows) continue;
               Row r = MakeRow(s, static_cast<double>(t - first_ns) / 1e9);
               for (const auto& p : s.processes) {
                 if (!p.name.empty()) names[p.pid] = p.name;
               }
               rows.push_back(std::move(r));
             }
             std::fflush(out);
           },
       .on_open = [](const Status&, std::string_view) {},
       .on_notice =
           [](sources::gpu::GpuBackend::Notice&& n) {
             std::cerr << "gpu sample: " << n.text << "\n";
           }});
  // SIGINT and SIGTERM end the run early: blocked here (and in the sampler thread, which
  // inherits the mask) and waited for, so the main thread sleeps until the end or a signal.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGINT);
  sigaddset(&stop_signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);
  sampler.Start(std::move(backend).value());
  const auto end = wall_before + *duration;
  while (true) {
    auto left = duration->count() == 0 ? std::chrono::nanoseconds(std::chrono::hours(1))
                                       : end - std::chrono::steady_clock::now();
    if (left <= std::chrono::nanoseconds(0)) break;
    const auto secs = std::chrono::duration_cast<std::chrono::seconds>(left);
    timespec wait{static_cast<time_t>(secs.count()), static_cast<long>((left - secs).count())};
    int sig = sigtimedwait(&stop_signals, nullptr, &wait);
    if (sig == SIGINT || sig == SIGTERM) break;
  }
  sampler.Stop();
  const double wall_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - wall_before).count();
  const double cpu_s = CpuSeconds() - cpu_before;
  if (out != stdout) std::fclose(out);

  auto num = [](double v) { return std::isfinite(v) ? fmt::format("{:.3f}", v) : "null"; };
  std::string summary = fmt::format(
      "{{\"rounds\":{},\"readings\":{},\"missed\":{},\"wall_s\":{:.3f},\"cpu_s\":{:.4f},"
      "\"cpu_pct_of_one_core\":{:.4f},\"period_ms\":{{\"p50\":{},\"p99\":{},"
      "\"max\":{}}},\"interval_ms\":{:.3f}}}",
      sampler.rounds(), readings, sampler.missed(), wall_s, cpu_s, 100.0 * cpu_s / wall_s,
      num(Percentile(periods_ms, 0.5)), num(Percentile(periods_ms, 0.99)),
      num(Percentile(periods_ms, 1.0)),
      std::chrono::duration<double, std::milli>(*interval).count());
  std::cerr << "gpu sample: " << summary << "\n";
  if (!o.summary_path.empty()) {
    std::ofstream(o.summary_path) << summary << "\n";
  }
  if (!o.svg_path.empty()) {
    std::ofstream svg(o.svg_path);
    svg << Svg(rows, names, devices);
    if (!svg) {
      std::cerr << "gpu sample: cannot write " << o.svg_path << "\n";
      return kExitRuntime;
    }
  }
  return kExitOk;
}

}  // namespace seedance::cli
