#include "mqtt/connection_status.h"

#include "util/log.h"

namespace seedance::mqtt {

ConnectionStatus::ConnectionStatus(observe::MetricsRegistry& metrics, const observe::Labels& labels,
                                   std::string log_name, observe::Counter& errors)
    : log_name_(std::move(log_name)),
      connected_(metrics.GetGauge("seedance_mqtt_connected",
                                  "1 while the MQTT session is connected.", labels)),
      connects_(metrics.GetCounter("seedance_mqtt_connects_total",
                                   "Successful MQTT connections (reconnects included).", labels)),
      errors_(errors) {}

void ConnectionStatus::OnState(ClientState s, const std::string& detail, bool news) {
  connected_.Set(s == ClientState::kConnected ? 1 : 0);
  switch (s) {
    case ClientState::kConnected:
      connects_.Add();
      if (news) SEEDANCE_LOG_INFO(log_name_, "connected to {}", detail);
      break;
    case ClientState::kDisconnected:
      errors_.Add();
      if (news) SEEDANCE_LOG_WARN(log_name_, "{}; retrying with backoff", detail);
      break;
    case ClientState::kConnecting:
    case ClientState::kStopped:
      SEEDANCE_LOG_DEBUG(log_name_, "{} {}", ClientStateName(s), detail);
      break;
  }
}

}  // namespace seedance::mqtt
