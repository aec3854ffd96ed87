// TopicTemplate: an MQTT topic name built from an event, e.g. `site/42/{topic.2}/{payload.device}`.
//
// Literal text with placeholders in braces:
//   {topic}           the event's topic
//   {topic.N}         its Nth level, counting from 1 (`a/b/c`: {topic.2} is `b`)
//   {payload.F.G}     field G of object F of the event's JSON payload: a string as it is, a
//                     number or a boolean as written in JSON
//   {header.NAME}     the event's header NAME
// `{{` and `}}` stand for literal braces.
//
// Parse() refuses (with what is wrong) an unknown placeholder, unbalanced braces, a wildcard
// (`+`, `#`) or U+0000 in the literal text, and a template with no text at all: `validate`
// reports it. Render() fails, saying why, when a placeholder has no value for the event (no
// such level, field or header; a field that is an object, array or null; an empty value) or
// the result is not a valid topic name (a wildcard or U+0000 from a value, not UTF-8, over
// 65,535 bytes); that event goes to `rejected` with the reason.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "seedance/event.h"
#include "seedance/result.h"

namespace seedance::sinks {

class TopicTemplate {
 public:
  static Result<TopicTemplate> Parse(std::string_view text);

  // Writes the topic for `event` to `out`; false with `why` set when it cannot be filled.
  bool Render(const Event& event, std::string* out, std::string* why) const;

  // True when no placeholder depends on the event (the topic is always the same).
  bool is_constant() const {
    return parts_.size() <= 1 && (parts_.empty() || parts_[0].kind == Kind::kText);
  }
  bool uses_payload() const { return uses_payload_; }

 private:
  enum class Kind { kText, kTopic, kTopicLevel, kPayloadField, kHeader };
  struct Part {
    Kind kind = Kind::kText;
    std::string text;               // kText: the text; kHeader: the name
    size_t level = 0;               // kTopicLevel, from 1
    std::vector<std::string> path;  // kPayloadField
  };

  std::vector<Part> parts_;
  bool uses_payload_ = false;
};

}  // namespace seedance::sinks
