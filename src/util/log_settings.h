// The `log:` section, declared next to the logger.
#pragma once

#include <string>

#include "seedance/options.h"

namespace seedance::util {

struct LogSettings {
  std::string level = "info";  // debug, info, warn, error or off
};

const Options<LogSettings>& LogSchema();

}  // namespace seedance::util
