// The event headers a sink sends along as its protocol's headers (HTTP header fields, NATS
// message headers, Kafka record headers): `event_headers` names them, or name prefixes ending
// in '*' ("mqtt_user_*"; "*" for all). They come from devices and scripts, so at most 8 KiB of
// them go with one message, and where the protocol's headers are text lines (HTTP, NATS) a
// name that is not an RFC 9110 token or a value with a control character is left out: a line
// break would start another header field.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "seedance/event.h"
#include "seedance/status.h"

namespace seedance::sinks {

// The most bytes (names and values) of event headers one message carries.
inline constexpr size_t kMaxEventHeaderBytes = 8192;

// Why `name: value` cannot be a text header field, or OK.
Status CheckHeaderField(std::string_view name, std::string_view value);

class HeaderSelection {
 public:
  // `text_fields`: the protocol's headers are text lines (check each name and value).
  HeaderSelection(std::vector<std::string> patterns, bool text_fields)
      : patterns_(std::move(patterns)), text_fields_(text_fields) {}

  bool empty() const { return patterns_.empty(); }
  bool Wanted(std::string_view name) const;

  // Calls add(name, value) for each header of `e` selected, sendable, and within the bytes.
  template <typename Add>
  void ForEach(const Event& e, Add&& add) const {
    size_t bytes = 0;
    for (const Header& h : e.headers) {
      if (!Wanted(h.name) || bytes + h.name.size() + h.value.size() > kMaxEventHeaderBytes) {
        continue;
      }
      if (text_fields_ && !CheckHeaderField(h.name, h.value).ok()) continue;
      bytes += h.name.size() + h.value.size();
      add(h);
    }
  }

 private:
  std::vector<std::string> patterns_;
  bool text_fields_;
};

}  // namespace seedance::sinks
