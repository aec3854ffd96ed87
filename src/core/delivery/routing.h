// Routing: which events of the outputs it reads a sink takes. In durable mode one queue record
// serves every sink, so a sink's source filters with it; in memory mode the Router asks it
// before queuing a copy.
#pragma once

#include <string>
#include <vector>

#include "seedance/event.h"

namespace seedance::delivery {

struct Routing {
  // MQTT-style filters (+, #) an event's topic must match (`topics:`); empty: any topic.
  std::vector<std::string> topics;
  // With named outputs in the pipeline: the outputs the sink consumes, by name (main, a side
  // output, a named one); an event is on the output its `output` header names (none: main).
  bool by_output = false;
  std::vector<std::string> outputs;

  // True when the sink takes `event`.
  bool Wants(const Event& event) const;
  // True when some events are not taken (a filter is set).
  bool Filters() const { return by_output || !topics.empty(); }
};

}  // namespace seedance::delivery
