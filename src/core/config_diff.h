// ConfigDiff: what a reload changes between the running configuration and the file loaded
// again (core/pipeline_host.h applies it).
//
// - Processors: new parameters are taken in place, keeping their state (core/reloader.h). A
//   changed processor list (added, removed, renamed, retyped, reordered) is refused: their
//   state is checkpointed by name and position, so that needs a restart.
// - Sources and sinks (with their inputs and topics), matched by name: only those added,
//   changed or removed are built again; the others run on. A sink whose name stays keeps its
//   queue position; an added one starts at the queue's end; a removed one's position is
//   dropped. With `queue.buffer: memory` a sink change rebuilds the whole pipeline (the sink
//   queues are in the runners), as do reordered sources or sinks.
// - Queue limits, memory limits, the pipeline section: the whole pipeline is rebuilt.
// - queue.data_dir and queue.buffer cannot change (the queued records would be left behind):
//   refused, needs a restart.
// - metrics (listen, token): the listener alone is replaced. log.level: applied at once.
#pragma once

#include <string>
#include <vector>

#include "config/config.h"

namespace seedance {

struct ConfigDiff {
  std::vector<std::string> changes;  // what differs, for the log and the reload state
  struct Components {                // sources or sinks, by name
    std::vector<std::string> added, changed, removed;
    bool any() const { return !added.empty() || !changed.empty() || !removed.empty(); }
  };
  Components sources, sinks;
  bool processor_params = false;  // processors' parameters differ
  bool rebuild = false;           // components are built again (`whole` or only some)
  bool whole = false;             // the whole pipeline must be rebuilt
  bool listener = false;          // metrics.listen or metrics.token differ
  bool log_level = false;
  std::string refused;  // why the change cannot be made by a reload ("" when it can)
  bool empty() const { return changes.empty() && refused.empty(); }
};

ConfigDiff DiffConfigs(const config::PipelineConfig& now, const config::PipelineConfig& next);

}  // namespace seedance
