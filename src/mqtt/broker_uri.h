// Broker URIs: tcp://host[:port], mqtt://, ssl://, tls://, mqtts://.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "seedance/result.h"

namespace seedance::mqtt {

struct BrokerAddress {
  std::string host;
  uint16_t port = 1883;
  bool tls = false;
};

// kInvalidArgument with the expected form when `uri` is not a broker URI.
Result<BrokerAddress> ParseBrokerUri(std::string_view uri);

}  // namespace seedance::mqtt
