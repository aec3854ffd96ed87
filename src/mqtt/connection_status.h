// ConnectionStatus: what an MQTT client's state changes mean for a component (the source or
// the sink): the seedance_mqtt_connected gauge, seedance_mqtt_connects_total, the component's
// error counter, and the log lines (a connection and each reason it failed are logged once
// per outage: the client's `news`).
#pragma once

#include <string>

#include "mqtt/client.h"
#include "observe/metrics.h"

namespace seedance::mqtt {

class ConnectionStatus {
 public:
  // `errors` counts failed connections (the component's standard error counter).
  ConnectionStatus(observe::MetricsRegistry& metrics, const observe::Labels& labels,
                   std::string log_name, observe::Counter& errors);
  // The client's StateHandler.
  void OnState(ClientState state, const std::string& detail, bool news);

 private:
  std::string log_name_;
  observe::Gauge& connected_;
  observe::Counter& connects_;
  observe::Counter& errors_;
};

}  // namespace seedance::mqtt
