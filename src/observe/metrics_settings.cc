#include "observe/metrics_settings.h"

#include "util/listen_address.h"

namespace seedance::observe {

const Options<MetricsSettings>& MetricsSchema() {
  static const Options<MetricsSettings> o =
      Options<MetricsSettings>()
          .Add(&MetricsSettings::listen,
               {.name = "listen",
                .doc = "address:port of the /metrics and /healthz listener, e.g. 127.0.0.1:9464 "
                       "(\":9464\" listens on every IPv4 address)",
                .validator =
                    [](const ParamValue& v) {
                      return util::ParseListenAddress(std::get<std::string>(v)).status();
                    }})
          .Add(&MetricsSettings::token,
               {.name = "token",
                .doc = "bearer token `seedance tap` must give when listen is beyond loopback "
                       "(without one, taps are served to loopback listeners only; use ${VAR})"});
  return o;
}

}  // namespace seedance::observe
