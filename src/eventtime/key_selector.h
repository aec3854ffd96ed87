// KeySelector: the key of an event for per-key watermarks and windows — a payload field
// (dotted path; strings as they are, numbers and booleans as JSON text) or a topic level
// (0-based, "sensor/d1/temperature" level 1 = "d1"), or none (one key for everything).
#pragma once

#include <optional>
#include <string>

#include <rapidjson/document.h>

#include "seedance/event.h"
#include "seedance/options.h"

namespace seedance::eventtime {

struct KeySelector {
  std::string field;     // "" = not from the payload
  int topic_level = -1;  // -1 = not from the topic

  bool none() const { return field.empty() && topic_level < 0; }
  // The key, or nullopt when the event has no such field or level. `payload` may be null
  // (not JSON) when only the topic is used.
  std::optional<std::string> KeyOf(const Event& event, const rapidjson::Value* payload) const;
  std::string Describe() const;
};

// The key_field and key_topic_level parameters, shared by the processors that key events.
const Options<KeySelector>& KeySelectorSchema();

}  // namespace seedance::eventtime
