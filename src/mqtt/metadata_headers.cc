#include "mqtt/metadata_headers.h"

#include <charconv>
#include <string>

#include "util/strings.h"

namespace seedance::mqtt {
namespace {

void Add(Event* e, std::string name, std::string_view value) {
  e->headers.push_back(Header{std::move(name), std::string(value)});
}

bool ParseU32(std::string_view s, uint32_t* out) {
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), *out);
  return ec == std::errc() && end == s.data() + s.size();
}

bool Has(const Properties& props, uint8_t id) { return FindProperty(props, id) != nullptr; }

}  // namespace

size_t PropertiesToHeaders(const Properties& props, Event* e) {
  size_t users = 0, left_out = 0;
  for (const Property& p : props) {
    switch (p.id) {
      case prop::kContentType:
        Add(e, kContentTypeHeader, p.text);
        break;
      case prop::kPayloadFormat:
        Add(e, kPayloadFormatHeader, p.number == 1 ? "1" : "0");
        break;
      case prop::kMessageExpiry:
        Add(e, kMessageExpiryHeader, std::to_string(p.number));
        break;
      case prop::kResponseTopic:
        Add(e, kResponseTopicHeader, p.text);
        break;
      case prop::kCorrelationData: {
        std::string b64;
        util::AppendBase64(b64, p.text);
        Add(e, kCorrelationDataHeader, b64);
        break;
      }
      case prop::kUserProperty:
        if (users++ >= kMaxUserProperties) {
          ++left_out;
          break;
        }
        Add(e, IsTraceContextHeader(p.text) ? p.text : kUserPropertyPrefix + p.text, p.value);
        break;
      default:
        break;
    }
  }
  return left_out;
}

void HeadersToProperties(const Event& e, Properties* props) {
  const bool had_content_type = Has(*props, prop::kContentType);
  const bool had_payload_format = Has(*props, prop::kPayloadFormat);
  const bool had_expiry = Has(*props, prop::kMessageExpiry);
  const std::string_view user_prefix(kUserPropertyPrefix);
  for (const Header& h : e.headers) {
    if (IsTraceContextHeader(h.name)) {
      props->push_back({.id = prop::kUserProperty, .text = h.name, .value = h.value});
      continue;
    }
    if (!h.name.starts_with("mqtt_")) continue;
    if (h.name.starts_with(user_prefix)) {
      props->push_back(
          {.id = prop::kUserProperty, .text = h.name.substr(user_prefix.size()), .value = h.value});
    } else if (h.name == kContentTypeHeader && !had_content_type) {
      props->push_back({.id = prop::kContentType, .text = h.value});
    } else if (h.name == kPayloadFormatHeader && !had_payload_format &&
               (h.value == "0" || h.value == "1")) {
      props->push_back({.id = prop::kPayloadFormat, .number = h.value == "1" ? 1u : 0u});
    } else if (h.name == kMessageExpiryHeader && !had_expiry) {
      uint32_t seconds = 0;
      if (ParseU32(h.value, &seconds) && seconds > 0) {
        props->push_back({.id = prop::kMessageExpiry, .number = seconds});
      }
    } else if (h.name == kResponseTopicHeader) {
      const bool valid = !h.value.empty() && h.value.size() <= 65535 &&
                         h.value.find_first_of(std::string_view("+#\0", 3)) == std::string::npos &&
                         util::IsValidUtf8(h.value);
      if (valid) props->push_back({.id = prop::kResponseTopic, .text = h.value});
    } else if (h.name == kCorrelationDataHeader) {
      std::string bytes;
      if (util::DecodeBase64(h.value, &bytes)) {
        props->push_back({.id = prop::kCorrelationData, .text = std::move(bytes)});
      }
    }
  }
}

}  // namespace seedance::mqtt
