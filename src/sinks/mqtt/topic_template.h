// TopicTemplate: an MQTT topic name built from an event, e.g. `site/42/{topic.2}/{payload.device}`
// (the placeholders of sinks/common/event_template.h).
//
// Parse() also refuses a wildcard (`+`, `#`) in the literal text: `validate` reports it.
// Render() also fails when the result is not a valid topic name (a wildcard or U+0000 from a
// value, not UTF-8, over 65,535 bytes); that event goes to `rejected` with the reason.
#pragma once

#include <string>
#include <string_view>

#include "seedance/event.h"
#include "seedance/result.h"
#include "sinks/common/event_template.h"

namespace seedance::sinks {

class TopicTemplate {
 public:
  static Result<TopicTemplate> Parse(std::string_view text);

  // Writes the topic for `event` to `out`; false with `why` set when it cannot be filled.
  bool Render(const Event& event, std::string* out, std::string* why) const;

  // True when no placeholder depends on the event (the topic is always the same).
  bool is_constant() const { return template_.is_constant(); }
  bool uses_payload() const { return template_.uses_payload(); }

 private:
  EventTemplate template_;
};

}  // namespace seedance::sinks
