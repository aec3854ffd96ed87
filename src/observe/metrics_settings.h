// The `metrics:` section: the /metrics and /healthz listener, declared next to it.
#pragma once

#include <string>

#include "seedance/options.h"

namespace seedance::observe {

struct MetricsSettings {
  std::string listen;  // "" = off
  std::string token;   // bearer token for /tap (and /reload) when listen is beyond loopback
};

const Options<MetricsSettings>& MetricsSchema();

}  // namespace seedance::observe
