#include "core/config_diff.h"

#include <fmt/format.h>

#include <algorithm>

namespace seedance {
namespace {

bool SameComponent(const config::ComponentConfig& a, const config::ComponentConfig& b) {
  return a.type == b.type && a.inputs == b.inputs && a.named_inputs == b.named_inputs &&
         a.topics == b.topics && a.params.SameValues(b.params);
}

const config::ComponentConfig* Named(const std::vector<config::ComponentConfig>& list,
                                     const std::string& name) {
  auto it = std::find_if(list.begin(), list.end(), [&](const auto& c) { return c.name == name; });
  return it == list.end() ? nullptr : &*it;
}

// Sources or sinks, matched by name.
void DiffComponents(const char* kind, const std::vector<config::ComponentConfig>& now,
                    const std::vector<config::ComponentConfig>& next, ConfigDiff* d,
                    ConfigDiff::Components* out) {
  for (const auto& c : next) {
    const config::ComponentConfig* was = Named(now, c.name);
    if (was == nullptr) {
      d->changes.push_back(fmt::format("{} \"{}\" added", kind, c.name));
      out->added.push_back(c.name);
    } else if (!SameComponent(*was, c)) {
      d->changes.push_back(fmt::format("{} \"{}\" changed", kind, c.name));
      out->changed.push_back(c.name);
    }
  }
  for (const auto& c : now) {
    if (Named(next, c.name) == nullptr) {
      d->changes.push_back(fmt::format("{} \"{}\" removed", kind, c.name));
      out->removed.push_back(c.name);
    }
  }
  // The names both keep, in another order: routing and start order follow the list.
  std::vector<std::string> kept_now, kept_next;
  for (const auto& c : now) {
    if (Named(next, c.name) != nullptr) kept_now.push_back(c.name);
  }
  for (const auto& c : next) {
    if (Named(now, c.name) != nullptr) kept_next.push_back(c.name);
  }
  if (kept_now != kept_next) {
    d->changes.push_back(fmt::format("{}s reordered", kind));
    d->whole = true;
  }
}

bool SameQueueLimits(const storage::QueueSettings& a, const storage::QueueSettings& b) {
  return a.segment_bytes == b.segment_bytes && a.max_disk == b.max_disk &&
         a.drop_oldest == b.drop_oldest && a.fsync.mode == b.fsync.mode &&
         a.fsync.interval == b.fsync.interval;
}

bool SameLimits(const governor::LimitsSettings& a, const governor::LimitsSettings& b) {
  const auto& p = a.policy;
  const auto& q = b.policy;
  return a.memory == b.memory && a.step == b.step && p.occupancy_trigger == q.occupancy_trigger &&
         p.occupancy_samples == q.occupancy_samples &&
         p.idle_share_trigger == q.idle_share_trigger && p.idle_steps == q.idle_steps &&
         p.fragmentation_trigger == q.fragmentation_trigger &&
         p.min_victim_bytes == q.min_victim_bytes && p.low_watermark == q.low_watermark &&
         p.async_copies == q.async_copies;
}

}  // namespace

ConfigDiff DiffConfigs(const config::PipelineConfig& now, const config::PipelineConfig& next) {
  ConfigDiff d;
  // Processors: the same list, or a restart.
  bool same_list = now.processors.size() == next.processors.size();
  for (size_t i = 0; same_list && i < now.processors.size(); ++i) {
    same_list = now.processors[i].name == next.processors[i].name &&
                now.processors[i].type == next.processors[i].type;
  }
  if (!same_list) {
    d.refused =
        "the processor list changed (added, removed, renamed or reordered processors keep "
        "their state by name and position); that needs a restart";
    return d;
  }
  if (now.queue.data_dir != next.queue.data_dir || now.queue.durable != next.queue.durable) {
    d.refused =
        "queue.data_dir or queue.buffer changed (the queued records would be left behind); "
        "that needs a restart";
    return d;
  }
  for (size_t i = 0; i < now.processors.size(); ++i) {
    if (!now.processors[i].params.SameValues(next.processors[i].params)) {
      d.processor_params = true;
      d.changes.push_back(fmt::format("processor \"{}\" parameters", next.processors[i].name));
    }
  }
  DiffComponents("source", now.sources, next.sources, &d, &d.sources);
  DiffComponents("sink", now.sinks, next.sinks, &d, &d.sinks);
  // Memory buffers are the sink runners' own queues: no runner is replaced alone there.
  if (!next.queue.durable && d.sinks.any()) d.whole = true;
  const size_t before_settings = d.changes.size();
  if (!SameQueueLimits(now.queue, next.queue)) d.changes.push_back("queue");
  if (!SameLimits(now.limits, next.limits)) d.changes.push_back("limits");
  if (!(now.tracing == next.tracing)) d.changes.push_back("tracing");  // the pipeline's tracer
  if (now.queue_capacity != next.queue_capacity || now.shutdown_timeout != next.shutdown_timeout) {
    d.changes.push_back("pipeline");
  }
  if (d.changes.size() > before_settings) d.whole = true;
  d.rebuild = d.whole || d.sources.any() || d.sinks.any();
  if (now.metrics.listen != next.metrics.listen || now.metrics.token != next.metrics.token) {
    d.listener = true;
    d.changes.push_back("metrics");
  }
  if (now.log.level != next.log.level) {
    d.log_level = true;
    d.changes.push_back("log.level");
  }
  return d;
}

}  // namespace seedance
