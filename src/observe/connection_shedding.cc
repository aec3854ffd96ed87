#include "observe/connection_shedding.h"

#include <utility>

namespace seedance::observe {

ConnectionShedding::ConnectionShedding(MetricsRegistry& metrics, std::string component,
                                       std::string share)
    : component_(std::move(component)),
      share_(std::move(share)),
      idle_(metrics.GetCounter("seedance_connections_shed_total",
                               "Connections a listener closed to serve another: an idle one "
                               "closed to make room (idle), a new one refused because its "
                               "client holds its share, every one busy (client_limit).",
                               {{"component", component_}, {"reason", "idle"}})),
      refused_(metrics.GetCounter("seedance_connections_shed_total", "",
                                  {{"component", component_}, {"reason", "client_limit"}})) {}

void ConnectionShedding::Shed(const std::string& client, bool refused) {
  if (!refused) return idle_.Add();
  refused_.Add();
  uint64_t suppressed = 0;
  if (limiter_.Allow("client_limit", &suppressed)) {
    SEEDANCE_LOG_WARN(component_, "refused a connection from {}: it holds {}, every one busy",
                      client, share_);
  }
}

}  // namespace seedance::observe
