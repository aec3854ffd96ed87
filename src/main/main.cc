// seedance: the command line. Kept thin: parsing here, work in commands.
#include <CLI/CLI.hpp>

#include <iostream>

#include "build_info.h"  // generated: SEEDANCE_GIT_COMMIT
#include "main/commands.h"
#include "util/fd_io.h"

namespace {

// A word (not an option) at argv[at] where `app` takes no positional argument: it must name
// one of its subcommands (checked down the chain); anything else is a usage error whatever
// follows it. CLI11 would answer `seedance nonsense --help` with the top-level help and exit
// 0, misleading a script that checks for a subcommand (`seedance tap --help && ...`).
bool UnknownSubcommand(CLI::App& app, int argc, char** argv, int at) {
  if (at >= argc || argv[at][0] == '-') return false;
  const auto subs = app.get_subcommands([](CLI::App*) { return true; });
  for (CLI::App* sub : subs) {
    if (sub->get_name() == argv[at]) return UnknownSubcommand(*sub, argc, argv, at + 1);
  }
  const bool takes_positional =
      !app.get_options([](const CLI::Option* o) { return o->get_positional(); }).empty();
  if (takes_positional) return false;  // describe PLUGIN, validate CONFIG
  const std::string where = app.get_parent() ? "seedance " + app.get_name() : "seedance";
  std::cerr << "error: " << (subs.empty() ? "unexpected argument" : "unknown subcommand") << " \""
            << argv[at] << "\" of " << where << " (run " << where << " --help)\n";
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace seedance::cli;
  seedance::util::OpenStandardDescriptors();
  CLI::App app{
      "Seedance: an edge dataflow runtime (MQTT → Lua → HTTP), in one small binary.\n"
      "Exit codes: 0 ok, 1 runtime failure, 2 bad configuration or usage."};
  app.set_version_flag("--version", "seedance " SEEDANCE_VERSION);
  RunOptions top;
  app.add_option("-c,--config", top.config_path, "pipeline configuration (YAML)");
  app.add_option("-f,--filter", top.filter_path,
                 "Lua filter run in front of the configured processors");
  app.add_option("--log-level", top.log_level, "debug, info, warn, error or off");

  RunOptions run_opts;
  CLI::App* run = app.add_subcommand("run", "run a pipeline until SIGINT or SIGTERM");
  run->add_option("-c,--config", run_opts.config_path, "pipeline configuration (YAML)")->required();
  run->add_option("-f,--filter", run_opts.filter_path,
                  "Lua filter run in front of the configured processors");
  run->add_option("--log-level", run_opts.log_level, "debug, info, warn, error or off");

  RunOptions validate_opts;
  CLI::App* validate = app.add_subcommand(
      "validate", "check a configuration (and filter scripts) without connecting to anything");
  validate->add_option("-c,--config,config", validate_opts.config_path, "pipeline configuration")
      ->required();
  validate->add_option("-f,--filter", validate_opts.filter_path, "Lua filter to check as well");

  TestOptions test_opts;
  CLI::App* test = app.add_subcommand(
      "test", "run the unit tests of a pipeline's processors (see docs/operations.md)");
  test->add_option("-c,--config", test_opts.config_path, "pipeline configuration")->required();
  test->add_option("-f,--filter", test_opts.filter_path, "Lua filter in front, as for run");
  test->add_option("-t,--tests", test_opts.tests_path,
                   "tests file (default: <config>.tests.yaml beside the config)");
  test->add_option("--junit", test_opts.junit_path, "also write a JUnit XML report here");

  TapOptions tap_opts;
  CLI::App* tap = app.add_subcommand(
      "tap",
      "print the events passing points of a running pipeline, as NDJSON (docs/operations.md)");
  tap->add_option("--url", tap_opts.url, "the pipeline's metrics listener")->capture_default_str();
  tap->add_option(
      "--component", tap_opts.components,
      "a source's output, a processor's output or a sink's input, by name (repeatable)");
  tap->add_option("--output", tap_opts.outputs, "a side output (repeatable)")
      ->check(CLI::IsMember({"stale", "error", "rejected"}));
  tap->add_option("--topic", tap_opts.topic, "only events whose topic matches this MQTT filter");
  tap->add_option("--sample", tap_opts.sample, "every Nth event")->check(CLI::PositiveNumber);
  tap->add_option("--limit", tap_opts.limit, "stop after N events (0: never)");
  tap->add_option("--token", tap_opts.token,
                  "metrics.token, needed beyond loopback (default: $SEEDANCE_TOKEN)");

  ReloadOptions reload_opts;
  CLI::App* reload = app.add_subcommand(
      "reload", "make a running pipeline reload its configuration file, and say how it went");
  reload->add_option("--url", reload_opts.url, "the pipeline's metrics listener")
      ->capture_default_str();
  reload->add_option("--token", reload_opts.token,
                     "metrics.token, needed beyond loopback (default: $SEEDANCE_TOKEN)");
  reload->add_option("--timeout", reload_opts.timeout, "how long to wait for the outcome")
      ->capture_default_str();

  TopOptions top_opts;
  CLI::App* top_command = app.add_subcommand(
      "top", "a live view of a running pipeline's rates, queues and sinks (q quits)");
  top_command->add_option("--url", top_opts.url, "the pipeline's metrics listener")
      ->capture_default_str();
  top_command->add_option("--interval", top_opts.interval, "refresh period")->capture_default_str();
  top_command->add_flag("--once", top_opts.once,
                        "print one snapshot as plain text (rates over one interval) and exit");

  std::string plugin;
  CLI::App* describe =
      app.add_subcommand("describe", "list plugins, or show one plugin's parameters");
  describe->add_option("plugin", plugin, "plugin type, e.g. mqtt or http");

  BenchCommandOptions bench_opts;
  CLI::App* bench = app.add_subcommand(
      "bench", "run a pipeline against generated load and write a JSON report (docs/bench.md)");
  bench->add_option("-c,--config", bench_opts.config_path, "pipeline configuration (YAML)");
  bench->add_option("-f,--filter", bench_opts.filter_path, "Lua filter, as for run");
  bench->add_option("--broker", bench_opts.broker,
                    "publish through this broker instead of the "
                    "config's (tcp://HOST:PORT)");
  bench->add_option("--rate", bench_opts.rate, "events per second (default: as fast as possible)");
  bench->add_option("--count", bench_opts.count, "events to generate");
  bench->add_option("--duration", bench_opts.duration, "generate for this long, e.g. 30s");
  bench->add_option("--repeat", bench_opts.repeat, "runs; the report's figures are medians")
      ->check(CLI::PositiveNumber);
  bench->add_option("--payload", bench_opts.payload,
                    "JSON object template of each event; {n} = sequence number");
  bench->add_option("--interval", bench_opts.interval, "timeline resolution")
      ->capture_default_str();
  bench
      ->add_option("--settle", bench_opts.settle,
                   "after the load, stop when nothing was delivered for this long")
      ->capture_default_str();
  bench
      ->add_option("--drain-timeout", bench_opts.drain_timeout,
                   "after the load, wait at most this long for deliveries")
      ->capture_default_str();
  bench->add_option("-o,--out", bench_opts.out_path, "write the report here (default stdout)");
  bench->add_option("--svg", bench_opts.svg_path, "write latency and RSS over time as SVG");
  bench->add_flag("--keep-workdir", bench_opts.keep_workdir, "keep the run's work directory");

  CompareCommandOptions compare_opts;
  CLI::App* compare = bench->add_subcommand(
      "compare", "compare two bench reports; exit 1 when a figure regressed past its threshold");
  compare->add_option("--baseline", compare_opts.baseline_path, "baseline report")->required();
  compare->add_option("--target", compare_opts.target_path, "report to judge")->required();
  compare->add_option("--threshold", compare_opts.threshold, "allowed change, e.g. 5%")
      ->capture_default_str();
  compare->add_option("--metric-threshold", compare_opts.metric_thresholds,
                      "per figure, e.g. latency_ms.p99=10% (repeatable)");

  SloCheckOptions slo_opts;
  CLI::App* slo = app.add_subcommand(
      "slo-check", "check a latency or throughput objective over a window; exit 0 met, 1 not");
  slo->add_option("--metric", slo_opts.metric, "p95_latency_ms, p99_latency_ms, throughput_eps ...")
      ->required();
  slo->add_option("--slo", slo_opts.slo, "the objective (ms for latency, events/s)")->required();
  slo->add_option("--window", slo_opts.window, "window, e.g. 5m (0 = since start / whole run)")
      ->capture_default_str();
  slo->add_option("--url", slo_opts.url, "a running seedance's /metrics URL");
  slo->add_option("--report", slo_opts.report_path, "a bench report");
  slo->add_option("--push", slo_opts.push_url, "Prometheus Pushgateway base URL");
  slo->add_option("--job", slo_opts.job, "Pushgateway job name")->capture_default_str();

  GpuSampleOptions gpu_opts;
  CLI::App* gpu = app.add_subcommand("gpu", "GPU telemetry tools");
  gpu->require_subcommand(1);
  CLI::App* gpu_sample = gpu->add_subcommand(
      "sample", "read every GPU each interval (like nvidia-smi -lms): NDJSON, summary, SVG");
  gpu_sample->add_option("--interval", gpu_opts.interval, "time between readings")
      ->capture_default_str();
  gpu_sample->add_option("--duration", gpu_opts.duration, "how long to sample (0: until Ctrl-C)")
      ->capture_default_str();
  gpu_sample->add_option("--pid", gpu_opts.pids, "list only this process (repeatable)");
  gpu_sample->add_option("-o,--out", gpu_opts.out_path, "NDJSON readings (- for stdout)")
      ->capture_default_str();
  gpu_sample->add_option("--svg", gpu_opts.svg_path,
                         "draw memory per process, utilisation and PCIe over time");
  gpu_sample->add_option("--summary", gpu_opts.summary_path,
                         "write the sampling's own figures (periods, missed, CPU) as JSON");
  gpu_sample->add_option("--backend", gpu_opts.backend, "auto, nvml or jetson")
      ->capture_default_str();
  gpu_sample->add_option("--nvml-library", gpu_opts.nvml_library, "the NVML library to load")
      ->capture_default_str();
  gpu_sample->add_option("--sysfs-root", gpu_opts.sysfs_root, "jetson: where sys/ and proc/ are")
      ->capture_default_str();
  gpu_sample->add_option("--device", gpu_opts.devices, "a GPU by index or UUID (repeatable)");

  CLI::App* version = app.add_subcommand(
      "version", "print the version, commit, build type, architecture and plugins");

  if (UnknownSubcommand(app, argc, argv, 1)) return kExitConfig;
  try {
    app.require_subcommand(0, 1);
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    int code = app.exit(e);
    return code == 0 ? kExitOk : kExitConfig;
  }
  if (*version) return Version(SEEDANCE_GIT_COMMIT);
  if (*validate) return Validate(validate_opts);
  if (*test) return Test(test_opts);
  if (*tap) return Tap(tap_opts);
  if (*reload) return Reload(reload_opts);
  if (*top_command) return Top(top_opts);
  if (*describe) return Describe(plugin);
  if (*compare) return BenchCompare(compare_opts);
  if (*bench) {
    if (bench_opts.config_path.empty()) {
      std::cerr << "bench: --config is required\n";
      return kExitConfig;
    }
    return Bench(bench_opts);
  }
  if (*slo) return SloCheck(slo_opts);
  if (*gpu_sample) return GpuSampleCommand(gpu_opts);
  if (*run) return Run(run_opts);
  if (top.config_path.empty()) {
    std::cerr << app.help() << "\nerror: --config is required (or use a subcommand)\n";
    return kExitConfig;
  }
  return Run(top);
}
