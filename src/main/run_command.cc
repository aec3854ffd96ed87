#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <fmt/format.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <iostream>
#include <thread>

#include "core/pipeline_host.h"
#include "governor/startup_pages.h"
#include "main/commands.h"
#include "main/load_config.h"
#include "plugins/builtin_plugins.h"
#include "sinks/common/event_encoding.h"
#include "util/fd_io.h"
#include "util/log.h"
#include "util/service_notify.h"
#include "util/thread_name.h"

namespace seedance::cli {

namespace {

// After `pipeline.shutdown_timeout` the pipeline gives up on its sinks; this much more is left
// for the last steps (closing connections, the final sync of the durable queue and cursors).
constexpr auto kShutdownGrace = std::chrono::seconds(1);

// The shutdown timeout is a hard promise: if the orderly shutdown has not ended by the timeout
// plus kShutdownGrace — a thread that cannot be interrupted (a script with its limits off, a
// stuck system call) — the process exits with kExitRuntime. Nothing acknowledged upstream is
// lost: it was committed to the durable queue before its acknowledgement, and the rest is sent
// again by the source.
// Start-up goes on for a moment after ready: the sources connect and subscribe. Once that has
// settled, the code and read-only data start-up touched are dropped from the process's mappings
// (governor/startup_pages.h).
constexpr auto kStartupSettle = std::chrono::milliseconds(500);

// The first signal that arrives within kStartupSettle, or 0 when none did.
int WaitForSignalOrSettle(const sigset_t& signals) {
  const auto seconds = std::chrono::duration_cast<std::chrono::seconds>(kStartupSettle);
  const timespec settle{seconds.count(),
                        std::chrono::nanoseconds(kStartupSettle - seconds).count()};
  for (;;) {
    const int n = sigtimedwait(&signals, nullptr, &settle);
    if (n > 0) return n;
    if (errno == EAGAIN) return 0;
    // EINTR: another signal (one not in the set) interrupted the wait; wait again.
  }
}

void StartShutdownWatchdog(std::chrono::nanoseconds timeout) {
  std::thread([timeout] {
    util::NameThisThread("sd-shutdown");
    std::this_thread::sleep_for(timeout + kShutdownGrace);
    SEEDANCE_LOG_ERROR(
        "seedance",
        "shutdown did not finish within pipeline.shutdown_timeout ({} ms) + {} s; exiting, "
        "abandoning the work in progress (acknowledged events are in the durable queue)",
        std::chrono::duration_cast<std::chrono::milliseconds>(timeout).count(),
        kShutdownGrace.count());
    std::_Exit(kExitRuntime);
  }).detach();
}

}  // namespace

int Run(const RunOptions& options) {
  const auto started = std::chrono::steady_clock::now();
  // Signals are taken by sigwait below; block them before any thread starts.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGHUP);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  ::signal(SIGPIPE, SIG_IGN);

  PluginRegistry registry;
  RegisterBuiltinPlugins(registry);
  auto config = LoadForRun(options, registry);
  if (!config) {
    std::cerr << config.error().message() << "\n";
    return kExitConfig;
  }
  util::LogLevel level = util::LogLevel::kInfo;
  const std::string& level_text = options.log_level.empty() ? config->log.level : options.log_level;
  if (!util::ParseLogLevel(level_text, &level)) {
    std::cerr << "--log-level: expected debug, info, warn, error or off, got \"" << level_text
              << "\"\n";
    return kExitConfig;
  }
  util::SetLogLevel(level);

  util::RaiseOpenFileLimit();
  observe::MetricsRegistry metrics;
  metrics
      .GetGauge("seedance_build_info", "Build information; always 1.",
                {{"version", SEEDANCE_VERSION}})
      .Set(1);
  // The pipeline, the listener and the taps, for the life of the process. Tapped events are
  // written as the sinks' envelope; POST /reload reaches the signal loop below as a SIGHUP.
  PipelineHost host(
      registry, metrics,
      [](const Event& e, std::string& out) {
        sinks::AppendEvent(e, sinks::EventEncoding::kEnvelope, /*as_json_value=*/true, out);
      },
      [] { kill(getpid(), SIGHUP); });
  // Every source's input ended (a `stdin` source read to its end): stop as on SIGTERM.
  static std::atomic<bool> inputs_ended{false};
  host.OnInputsEnded([] {
    inputs_ended = true;
    kill(getpid(), SIGTERM);
  });
  Status s = host.Start(*config);
  if (!s.ok()) {
    SEEDANCE_LOG_ERROR("seedance", "cannot start: {}", s.message());
    host.Shutdown();
    return s.code() == StatusCode::kInvalidArgument || s.code() == StatusCode::kNotFound
               ? kExitConfig
               : kExitRuntime;
  }
  auto ready_us = std::chrono::duration_cast<std::chrono::microseconds>(
                      std::chrono::steady_clock::now() - started)
                      .count();
  SEEDANCE_LOG_INFO("seedance", "ready in {:.1f} ms: {} source(s), {} processor(s), {} sink(s)",
                    ready_us / 1000.0, config->sources.size(), config->processors.size(),
                    config->sinks.size());
  util::NotifyServiceManager("READY=1");

  int signal_number = WaitForSignalOrSettle(signals);
  if (signal_number == 0) {
    const governor::ReleasedPages released = governor::ReleaseStartupPages();
    SEEDANCE_LOG_INFO("seedance", "start-up pages released: resident {} -> {} KiB ({} segments)",
                      released.bytes_before / 1024, released.bytes_after / 1024, released.segments);
    sigwait(&signals, &signal_number);
  }
  while (signal_number == SIGHUP) {
    SEEDANCE_LOG_INFO("seedance", "reloading {}", options.config_path);
    Status reloaded = host.Reload(LoadForRun(options, registry));
    if (reloaded.code() == StatusCode::kInternal) {  // neither configuration runs
      SEEDANCE_LOG_ERROR("seedance", "{}; exiting", reloaded.message());
      return kExitRuntime;
    }
    if (sigwait(&signals, &signal_number) != 0) break;
  }
  if (signal_number == SIGTERM && inputs_ended) {
    SEEDANCE_LOG_INFO("seedance", "every source's input has ended; stopping");
  } else {
    SEEDANCE_LOG_INFO("seedance", "received {}, stopping",
                      signal_number == SIGINT ? "SIGINT" : "SIGTERM");
  }
  util::NotifyServiceManager("STOPPING=1");
  StartShutdownWatchdog(host.config().shutdown_timeout);
  return host.Shutdown() ? kExitOk : kExitRuntime;
}

}  // namespace seedance::cli
