// ConnectionShedding: what a listener's util::Admit() sheds, counted and said. One per
// listener (the metrics listener, each http source): an idle connection closed to make room
// counts seedance_connections_shed_total{reason="idle"}; a new one refused because its client
// holds its share, every one busy, counts reason="client_limit" and is logged at most once a
// minute. Event loop only.
#pragma once

#include <cstddef>
#include <string>

#include "observe/metrics.h"
#include "util/log.h"

namespace seedance::observe {

class ConnectionShedding {
 public:
  // `share`: how the client's share is named in the log line, e.g. "8 connections".
  ConnectionShedding(MetricsRegistry& metrics, std::string component, std::string share);

  // The `on_shed` of util::Admit().
  void Shed(const std::string& client, bool refused);

 private:
  std::string component_;
  std::string share_;
  Counter& idle_;
  Counter& refused_;
  util::LogLimiter limiter_{std::chrono::minutes(1)};
};

}  // namespace seedance::observe
