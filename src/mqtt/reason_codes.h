// What the reason codes a broker sends mean, in words for logs and errors: CONNACK (3.1.1 return
// codes and MQTT 5 reason codes), DISCONNECT and SUBACK (MQTT 5, §3.14.2.1 and §3.9.3).
#pragma once

#include <cstdint>
#include <string>

#include "mqtt/packet.h"

namespace seedance::mqtt {

// "bad user name or password"; an unknown code as "reason code 0x9f".
std::string ConnackReasonText(Version v, uint8_t code);
// "server shutting down"; an unknown code as "reason code".
std::string DisconnectReasonText(uint8_t code);
// "not authorized"; an unknown failure as "refused".
std::string SubackReasonText(uint8_t code);

}  // namespace seedance::mqtt
