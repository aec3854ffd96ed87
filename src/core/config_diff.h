// ConfigDiff: what a reload changes between the running configuration and the file loaded
// again (core/pipeline_host.h applies it).
//
// - Processors: new parameters are taken in place, keeping their state (core/reloader.h). A
//   changed processor list (added, removed, renamed, retyped, reordered) is refused: their
//   state is checkpointed by name and position, so that needs a restart.
// - Sources, sinks (with their inputs and topics), queue limits, memory limits, the pipeline
//   section: the pipeline is rebuilt. Sinks are matched by name: a sink whose name stays keeps
//   its queue position; an added one starts at the queue's end; a removed one's position is
//   dropped.
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
  std::vector<std::string> sinks_added;
  std::vector<std::string> sinks_removed;
  bool processor_params = false;  // processors' parameters differ
  bool rebuild = false;           // the pipeline must be rebuilt
  bool listener = false;          // metrics.listen or metrics.token differ
  bool log_level = false;
  std::string refused;  // why the change cannot be made by a reload ("" when it can)
  bool empty() const { return changes.empty() && refused.empty(); }
};

ConfigDiff DiffConfigs(const config::PipelineConfig& now, const config::PipelineConfig& next);

}  // namespace seedance
