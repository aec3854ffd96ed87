// MQTT control packets (3.1.1 and 5.0) as plain value types.
//
// One struct per packet type; PUBACK, PUBREC, PUBREL and PUBCOMP share PubResponse. Fields that
// exist only in MQTT 5 (reason codes, properties) are ignored when encoding for 3.1.1.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <variant>
#include <vector>

namespace seedance::mqtt {

enum class Version : uint8_t { kV311 = 4, kV5 = 5 };

enum class PacketType : uint8_t {
  kConnect = 1,
  kConnack = 2,
  kPublish = 3,
  kPuback = 4,
  kPubrec = 5,
  kPubrel = 6,
  kPubcomp = 7,
  kSubscribe = 8,
  kSuback = 9,
  kUnsubscribe = 10,
  kUnsuback = 11,
  kPingreq = 12,
  kPingresp = 13,
  kDisconnect = 14,
  kAuth = 15,
};

// MQTT 5 property identifiers used by Seedance (the codec handles every identifier).
namespace prop {
inline constexpr uint8_t kPayloadFormat = 0x01;
inline constexpr uint8_t kMessageExpiry = 0x02;
inline constexpr uint8_t kContentType = 0x03;
inline constexpr uint8_t kResponseTopic = 0x08;
inline constexpr uint8_t kCorrelationData = 0x09;
inline constexpr uint8_t kSubscriptionId = 0x0B;
inline constexpr uint8_t kSessionExpiry = 0x11;
inline constexpr uint8_t kAssignedClientId = 0x12;
inline constexpr uint8_t kServerKeepAlive = 0x13;
inline constexpr uint8_t kAuthMethod = 0x15;
inline constexpr uint8_t kAuthData = 0x16;
inline constexpr uint8_t kReasonString = 0x1F;
inline constexpr uint8_t kReceiveMaximum = 0x21;
inline constexpr uint8_t kTopicAliasMaximum = 0x22;
inline constexpr uint8_t kTopicAlias = 0x23;
inline constexpr uint8_t kMaximumQos = 0x24;
inline constexpr uint8_t kUserProperty = 0x26;
inline constexpr uint8_t kMaximumPacketSize = 0x27;
}  // namespace prop

// One MQTT 5 property. Integer-valued properties use `number`; string and binary ones use
// `text`; a user property uses `text` (name) and `value`.
struct Property {
  uint8_t id = 0;
  uint32_t number = 0;
  std::string text;
  std::string value;
  bool operator==(const Property&) const = default;
};
using Properties = std::vector<Property>;

// Returns the first property with `id`, or nullptr.
const Property* FindProperty(const Properties& props, uint8_t id);

struct Will {
  std::string topic;
  std::string payload;
  uint8_t qos = 0;
  bool retain = false;
  Properties props;
  bool operator==(const Will&) const = default;
};

struct Connect {
  Version version = Version::kV311;
  std::string client_id;
  bool clean_start = true;
  uint16_t keep_alive_s = 60;
  std::optional<std::string> username;
  std::optional<std::string> password;
  std::optional<Will> will;
  Properties props;
  bool operator==(const Connect&) const = default;
};

struct Connack {
  bool session_present = false;
  uint8_t reason = 0;  // 3.1.1 return code or 5.0 reason code; 0 = accepted
  Properties props;
  bool operator==(const Connack&) const = default;
};

struct Publish {
  std::string topic;
  std::string payload;
  uint8_t qos = 0;
  bool retain = false;
  bool dup = false;
  uint16_t packet_id = 0;  // only when qos > 0
  Properties props;
  bool operator==(const Publish&) const = default;
};

// PUBACK, PUBREC, PUBREL or PUBCOMP.
struct PubResponse {
  PacketType type = PacketType::kPuback;
  uint16_t packet_id = 0;
  uint8_t reason = 0;
  Properties props;
  bool operator==(const PubResponse&) const = default;
};

struct Subscription {
  std::string filter;
  uint8_t options = 0;  // bits 0-1 QoS; 5.0 adds no-local (2), retain-as-published (3), retain
                        // handling (4-5)
  bool operator==(const Subscription&) const = default;
};

struct Subscribe {
  uint16_t packet_id = 0;
  std::vector<Subscription> subscriptions;
  Properties props;
  bool operator==(const Subscribe&) const = default;
};

struct Suback {
  uint16_t packet_id = 0;
  std::vector<uint8_t> reasons;  // granted QoS, or ≥ 0x80 for failure
  Properties props;
  bool operator==(const Suback&) const = default;
};

struct Unsubscribe {
  uint16_t packet_id = 0;
  std::vector<std::string> filters;
  Properties props;
  bool operator==(const Unsubscribe&) const = default;
};

struct Unsuback {
  uint16_t packet_id = 0;
  std::vector<uint8_t> reasons;  // 5.0 only
  Properties props;
  bool operator==(const Unsuback&) const = default;
};

struct PingReq {
  bool operator==(const PingReq&) const = default;
};
struct PingResp {
  bool operator==(const PingResp&) const = default;
};

struct Disconnect {
  uint8_t reason = 0;
  Properties props;
  bool operator==(const Disconnect&) const = default;
};

struct Auth {
  uint8_t reason = 0;
  Properties props;
  bool operator==(const Auth&) const = default;
};

using Packet = std::variant<Connect, Connack, Publish, PubResponse, Subscribe, Suback, Unsubscribe,
                            Unsuback, PingReq, PingResp, Disconnect, Auth>;

// Human-readable packet type name, e.g. "PUBLISH".
const char* PacketTypeName(PacketType type);
PacketType TypeOf(const Packet& packet);

}  // namespace seedance::mqtt
