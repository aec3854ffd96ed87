// KeySelector: the key of an event for per-key watermarks and windows — a payload field
// (dotted path; strings as they are, numbers and booleans as JSON text) or a topic level
// (0-based, "sensor/d1/temperature" level 1 = "d1"), or none (one key for everything).
#pragma once

#include <cstddef>
#include <string>

#include <rapidjson/document.h>

#include "seedance/event.h"
#include "seedance/options.h"
#include "seedance/status.h"

namespace seedance::eventtime {

struct KeySelector {
  std::string field;     // "" = not from the payload
  int topic_level = -1;  // -1 = not from the topic

  // The longest key taken: a key is held by every window and watermark of it (and written
  // into the checkpoint and each result's topic), so one from a hostile payload must not cost
  // a megabyte a key.
  static constexpr size_t kMaxKeyBytes = 256;

  bool none() const { return field.empty() && topic_level < 0; }
  // The key; kInvalidArgument with the reason (the side output's) when the event has no such
  // field or level, or its key is longer than kMaxKeyBytes. `payload` may be null (not JSON)
  // when only the topic is used.
  Result<std::string> KeyOf(const Event& event, const rapidjson::Value* payload) const;
  std::string Describe() const;
};

// The key_field and key_topic_level parameters, shared by the processors that key events.
const Options<KeySelector>& KeySelectorSchema();

}  // namespace seedance::eventtime
