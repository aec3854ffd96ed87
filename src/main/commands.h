// The `seedance` subcommands. Each returns the process exit code:
//   0 success, 1 runtime failure, 2 bad configuration or usage.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace seedance::cli {

inline constexpr int kExitOk = 0;
inline constexpr int kExitRuntime = 1;
inline constexpr int kExitConfig = 2;

struct RunOptions {
  std::string config_path;
  std::string filter_path;  // --filter: a Lua processor in front of the configured ones
  std::string log_level;    // overrides log.level when set
};

struct BenchCommandOptions {
  std::string config_path;
  std::string filter_path;
  std::string broker;
  std::string payload;
  double rate = 0;
  uint64_t count = 0;
  std::string duration;
  int repeat = 1;
  std::string interval = "500ms";
  std::string settle = "3s";
  std::string drain_timeout = "60s";
  std::string out_path;
  std::string svg_path;
  bool keep_workdir = false;
};

struct CompareCommandOptions {
  std::string baseline_path;
  std::string target_path;
  std::string threshold = "5%";
  std::vector<std::string> metric_thresholds;  // FIGURE=PERCENT
};

struct SloCheckOptions {
  std::string metric;
  double slo = 0;
  std::string window = "5m";
  std::string url;
  std::string report_path;
  std::string push_url;
  std::string job = "seedance_slo_check";
};

// `seedance gpu sample`: readings of every GPU per interval as NDJSON, a summary of the
// sampling, and an SVG of memory, utilisation and PCIe over time.
struct GpuSampleOptions {
  std::string interval = "200ms";
  std::string duration = "60s";   // 0: until SIGINT or SIGTERM
  std::vector<std::string> pids;  // only these processes (all when empty)
  std::string out_path = "-";
  std::string svg_path;
  std::string summary_path;
  std::string backend = "auto";
  std::string nvml_library = "libnvidia-ml.so.1";
  std::string sysfs_root = "/";
  std::vector<std::string> devices;
};

// `seedance test`: the tests file's cases against the config's processors. Exit 0 when all
// pass, 1 when one fails, 2 when the config or the tests file is wrong.
struct TestOptions {
  std::string config_path;
  std::string filter_path;
  std::string tests_path;  // default: <config's folder>/<config's stem>.tests.yaml
  std::string junit_path;  // --junit: a JUnit XML report too
};

// `seedance tap`: the events at named points of a running pipeline, as NDJSON on stdout.
struct TapOptions {
  std::string url = "http://127.0.0.1:9464";  // the metrics listener
  std::vector<std::string> components;
  std::vector<std::string> outputs;
  std::string topic;
  uint64_t sample = 1;
  uint64_t limit = 0;
  std::string token;  // default: $SEEDANCE_TOKEN
};

// `seedance top`: a live view of a running pipeline, from its /metrics.
struct TopOptions {
  std::string url = "http://127.0.0.1:9464";
  std::string interval = "1s";
  bool once = false;
};

// `seedance reload`: asks a running pipeline to reload its configuration file and waits for
// the outcome.
struct ReloadOptions {
  std::string url = "http://127.0.0.1:9464";
  std::string token;  // default: $SEEDANCE_TOKEN
  std::string timeout = "60s";
};

int Run(const RunOptions& options);
int Reload(const ReloadOptions& options);
int Tap(const TapOptions& options);
int Top(const TopOptions& options);
int Test(const TestOptions& options);
int GpuSampleCommand(const GpuSampleOptions& options);
int Bench(const BenchCommandOptions& options);
int BenchCompare(const CompareCommandOptions& options);
int SloCheck(const SloCheckOptions& options);
int Validate(const RunOptions& options);
int Describe(const std::string& plugin);
// `seedance version`: version, `commit` (the build's), build type, architecture, plugins.
int Version(const std::string& commit);

}  // namespace seedance::cli
