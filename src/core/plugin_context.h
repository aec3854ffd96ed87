// PluginContext: what the runtime hands a plugin's Create(): its name, the event loop,
// metrics and the clock. Plugins take time and metrics from here, never from globals.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <string>

#include "core/component_stats.h"
#include "observe/metrics.h"
#include "util/clock.h"
#include "util/event_loop.h"

namespace seedance {

class RedeliveryGuard;
namespace governor {
class MemoryBudget;
}

using util::WallNowNs;

struct PluginContext {
  std::string name;           // the component's name from the config
  EventLoop* loop = nullptr;  // where sources and sinks run
  observe::MetricsRegistry* metrics = nullptr;
  ComponentStats* stats = nullptr;  // the component's standard counters
  // This job on this host: "<hostname>-<8 hex digits: CRC-32C of the absolute
  // queue.data_dir>". The same across restarts, different for two jobs on one host (one
  // process per data directory): for names a remote side must tell apart (MQTT client ids).
  std::string instance;
  // queue.data_dir: where a source keeps its own state (the tail source's file positions).
  std::string data_dir;
  std::function<int64_t()> now_ns = WallNowNs;
  // True for `seedance validate`: check everything that needs no network, start nothing.
  bool validate_only = false;
  // Set for pipelines with stateful processors: sources with redeliveries consult it.
  RedeliveryGuard* redelivery = nullptr;
  // Set with `limits.memory`: processors charge what they hold for events here (sinks need
  // not: the sink runner charges a batch with the request built from it).
  governor::MemoryBudget* memory = nullptr;
};

}  // namespace seedance
