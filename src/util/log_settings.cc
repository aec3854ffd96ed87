#include "util/log_settings.h"

namespace seedance::util {

const Options<LogSettings>& LogSchema() {
  static const Options<LogSettings> o = Options<LogSettings>().Add(
      &LogSettings::level, {.name = "level",
                            .doc = "debug, info, warn, error or off",
                            .default_value = "info",
                            .allowed = {"debug", "info", "warn", "error", "off"}});
  return o;
}

}  // namespace seedance::util
