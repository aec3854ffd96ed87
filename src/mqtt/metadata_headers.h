// MQTT 5 message metadata as event headers, in and out (docs/mqtt.md, "Metadata"):
//
//   mqtt_content_type      content type
//   mqtt_payload_format    payload format indicator: "0" bytes, "1" UTF-8 text
//   mqtt_message_expiry    message expiry interval, seconds (what was left when it arrived)
//   mqtt_response_topic    response topic
//   mqtt_correlation_data  correlation data, base64 (it is binary)
//   mqtt_user_<name>       each user property; a repeated name gives repeated headers
//   traceparent, tracestate  the W3C trace context user properties (W3C's MQTT binding), under
//                          the names every sink and script reads them by; sent on as the same
//                          user properties
//
// At most kMaxUserProperties user properties of a message become headers (a broker or device
// could send thousands); PropertiesToHeaders says how many it left out.
#pragma once

#include <cstddef>
#include <string_view>

#include "mqtt/packet.h"
#include "seedance/event.h"

namespace seedance::mqtt {

inline constexpr char kContentTypeHeader[] = "mqtt_content_type";
inline constexpr char kPayloadFormatHeader[] = "mqtt_payload_format";
inline constexpr char kMessageExpiryHeader[] = "mqtt_message_expiry";
inline constexpr char kResponseTopicHeader[] = "mqtt_response_topic";
inline constexpr char kCorrelationDataHeader[] = "mqtt_correlation_data";
inline constexpr char kUserPropertyPrefix[] = "mqtt_user_";
inline constexpr size_t kMaxUserProperties = 64;

// "traceparent" or "tracestate": relayed as W3C trace context, not as mqtt_user_<name>.
inline bool IsTraceContextHeader(std::string_view name) {
  return name == "traceparent" || name == "tracestate";
}

// Adds the headers above for `props`; returns the user properties left out (over the limit).
size_t PropertiesToHeaders(const Properties& props, Event* event);

// The other way, for publishing `event`: appends the properties its mqtt_* headers describe
// (a response topic that is not a valid topic name, correlation data that is not base64 and
// numbers out of range are left out). Properties already in `props` are not added again.
void HeadersToProperties(const Event& event, Properties* props);

}  // namespace seedance::mqtt
