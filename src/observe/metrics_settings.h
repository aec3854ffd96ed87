// The `metrics:` section: the /metrics and /healthz listener, declared next to it.
#pragma once

#include <string>

#include "seedance/options.h"

namespace seedance::observe {

struct MetricsSettings {
  std::string listen;  // "" = off
};

const Options<MetricsSettings>& MetricsSchema();

}  // namespace seedance::observe
