#include "mqtt/reason_codes.h"

#include <fmt/format.h>

namespace seedance::mqtt {

std::string ConnackReasonText(Version v, uint8_t code) {
  if (v == Version::kV311) {
    switch (code) {
      case 1:
        return "unacceptable protocol version";
      case 2:
        return "client identifier rejected";
      case 3:
        return "server unavailable";
      case 4:
        return "bad user name or password";
      case 5:
        return "not authorized";
    }
  } else {
    switch (code) {
      case 0x84:
        return "unsupported protocol version";
      case 0x85:
        return "client identifier not valid";
      case 0x86:
        return "bad user name or password";
      case 0x87:
        return "not authorized";
      case 0x88:
        return "server unavailable";
      case 0x89:
        return "server busy";
      case 0x8A:
        return "banned";
    }
  }
  return fmt::format("reason code 0x{:02x}", code);
}

std::string DisconnectReasonText(uint8_t code) {
  switch (code) {
    case 0x00:
      return "normal disconnection";
    case 0x80:
      return "unspecified error";
    case 0x81:
      return "malformed packet";
    case 0x82:
      return "protocol error";
    case 0x83:
      return "implementation specific error";
    case 0x87:
      return "not authorized";
    case 0x89:
      return "server busy";
    case 0x8B:
      return "server shutting down";
    case 0x8D:
      return "keep alive timeout";
    case 0x8E:
      return "session taken over (another client connected with this client_id)";
    case 0x8F:
      return "topic filter invalid";
    case 0x93:
      return "receive maximum exceeded";
    case 0x94:
      return "topic alias invalid";
    case 0x95:
      return "packet too large";
    case 0x96:
      return "message rate too high";
    case 0x97:
      return "quota exceeded";
    case 0x98:
      return "administrative action";
    case 0x9C:
      return "use another server";
    case 0x9D:
      return "server moved";
    case 0x9F:
      return "connection rate exceeded";
  }
  return "reason code";
}

std::string SubackReasonText(uint8_t code) {
  switch (code) {
    case 0x80:
      return "unspecified error";
    case 0x83:
      return "implementation specific error";
    case 0x87:
      return "not authorized";
    case 0x8F:
      return "topic filter invalid";
    case 0x91:
      return "packet identifier in use";
    case 0x97:
      return "quota exceeded";
    case 0x9E:
      return "shared subscriptions not supported";
    case 0xA1:
      return "subscription identifiers not supported";
    case 0xA2:
      return "wildcard subscriptions not supported";
  }
  return "refused";
}

const char* PublishReasonText(uint8_t reason) {
  switch (reason) {
    case 0x00:
      return "success";
    case 0x10:
      return "no matching subscribers";
    case 0x80:
      return "unspecified error";
    case 0x83:
      return "implementation specific error";
    case 0x87:
      return "not authorized";
    case 0x90:
      return "topic name invalid";
    case 0x91:
      return "packet identifier in use";
    case 0x95:
      return "packet too large";
    case 0x97:
      return "quota exceeded";
    case 0x99:
      return "payload format invalid";
  }
  return "refused";
}

}  // namespace seedance::mqtt
