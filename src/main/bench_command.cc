#include <signal.h>
#include <unistd.h>

#include <fstream>
#include <iostream>
#include <sstream>

#include "bench/bench_runner.h"
#include "bench/compare.h"
#include "main/commands.h"
#include "util/units.h"

namespace seedance::cli {
namespace {

bool ReadFile(const std::string& path, std::string* out) {
  std::ifstream in(path);
  if (!in) return false;
  std::stringstream ss;
  ss << in.rdbuf();
  *out = ss.str();
  return true;
}

bool ParseDurationOption(const std::string& name, const std::string& text,
                         std::chrono::nanoseconds* out) {
  if (text.empty()) return true;
  auto d = util::ParseDuration(text);
  if (!d) {
    std::cerr << name << ": " << d.error().message() << "\n";
    return false;
  }
  *out = *d;
  return true;
}

}  // namespace

int Bench(const BenchCommandOptions& o) {
  bench::BenchOptions options;
  options.config_path = o.config_path;
  options.filter_path = o.filter_path;
  options.broker_uri = o.broker;
  options.payload = o.payload;
  options.rate = o.rate;
  options.count = o.count;
  options.repeat = o.repeat;
  options.svg_path = o.svg_path;
  options.keep_workdir = o.keep_workdir;
  options.progress = isatty(STDERR_FILENO) == 1;
  if (!ParseDurationOption("--duration", o.duration, &options.duration) ||
      !ParseDurationOption("--interval", o.interval, &options.interval) ||
      !ParseDurationOption("--settle", o.settle, &options.settle) ||
      !ParseDurationOption("--drain-timeout", o.drain_timeout, &options.drain_timeout)) {
    return kExitConfig;
  }
  if (options.interval.count() <= 0) {
    std::cerr << "--interval must be above 0\n";
    return kExitConfig;
  }
  char exe[4096];
  ssize_t n = ::readlink("/proc/self/exe", exe, sizeof exe - 1);
  if (n <= 0) {
    std::cerr << "bench: cannot find its own binary (/proc/self/exe)\n";
    return kExitRuntime;
  }
  options.seedance_exe.assign(exe, static_cast<size_t>(n));
  ::signal(SIGPIPE, SIG_IGN);

  auto report = bench::RunBench(options);
  if (!report) {
    std::cerr << "bench: " << report.error().message() << "\n";
    return report.error().code() == StatusCode::kInvalidArgument ||
                   report.error().code() == StatusCode::kNotFound
               ? kExitConfig
               : kExitRuntime;
  }
  if (o.out_path.empty()) {
    std::cout << *report;
  } else {
    std::ofstream out(o.out_path);
    out << *report;
    if (!out) {
      std::cerr << "bench: cannot write " << o.out_path << "\n";
      return kExitRuntime;
    }
    std::cerr << "bench: report written to " << o.out_path << "\n";
  }
  return kExitOk;
}

int BenchCompare(const CompareCommandOptions& o) {
  bench::CompareOptions options;
  auto pct = bench::ParsePercent(o.threshold);
  if (!pct) {
    std::cerr << "--threshold: " << pct.error().message() << "\n";
    return kExitConfig;
  }
  options.threshold_pct = *pct;
  for (const auto& spec : o.metric_thresholds) {
    size_t eq = spec.find('=');
    auto value = eq == std::string::npos ? pct : bench::ParsePercent(spec.substr(eq + 1));
    if (eq == std::string::npos || !value) {
      std::cerr << "--metric-threshold: expected FIGURE=PERCENT (e.g. latency_ms.p99=10%), got \""
                << spec << "\"\n";
      return kExitConfig;
    }
    options.metric_threshold_pct[spec.substr(0, eq)] = *value;
  }
  std::string baseline, target;
  if (!ReadFile(o.baseline_path, &baseline)) {
    std::cerr << "cannot read baseline " << o.baseline_path << "\n";
    return kExitConfig;
  }
  if (!ReadFile(o.target_path, &target)) {
    std::cerr << "cannot read target " << o.target_path << "\n";
    return kExitConfig;
  }
  auto comparison = bench::CompareReports(baseline, target, options);
  if (!comparison) {
    std::cerr << comparison.error().message() << "\n";
    return kExitConfig;
  }
  std::cout << bench::FormatComparison(*comparison);
  return comparison->regressed ? kExitRuntime : kExitOk;
}

}  // namespace seedance::cli
