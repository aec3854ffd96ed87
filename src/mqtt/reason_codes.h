// What the reason codes a broker sends mean, in words for logs and errors: CONNACK (3.1.1 return
// codes and MQTT 5 reason codes), DISCONNECT, SUBACK and PUBACK/PUBREC (MQTT 5, §3.14.2.1,
// §3.9.3 and §3.4.2.1).
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
// "not authorized" for 0x87 and the other PUBACK/PUBREC reason codes (MQTT 5 §3.4.2.1); an
// unknown one as "refused".
const char* PublishReasonText(uint8_t reason);

}  // namespace seedance::mqtt
