// EventTemplate: text built from an event, e.g. `site/42/{topic.2}/{payload.device}`: the MQTT
// sink's topic, the InfluxDB sink's measurement and tags.
//
// Literal text with placeholders in braces:
//   {topic}           the event's topic
//   {topic.N}         its Nth level, counting from 1 (`a/b/c`: {topic.2} is `b`)
//   {payload.F.G}     field G of object F of the event's JSON payload: a string as it is, a
//                     number or a boolean as written in JSON
//   {header.NAME}     the event's header NAME
// `{{` and `}}` stand for literal braces.
//
// Parse() refuses (with what is wrong) an unknown placeholder, unbalanced braces, U+0000 or
// bytes that are not UTF-8, and a template with no text at all. Render() fails, saying why,
// when a placeholder has no value for the event (no such level, field or header; a field that
// is an object, array or null; an empty value).
#pragma once

#include <rapidjson/document.h>

#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "seedance/event.h"
#include "seedance/param_spec.h"
#include "seedance/result.h"

namespace seedance::sinks {

// An event's JSON payload, parsed on first use, once for every template and field filled from
// the same event.
class PayloadView {
 public:
  explicit PayloadView(const Event& event) : event_(event) {}
  // The payload when it is a JSON object, or nullptr.
  const rapidjson::Value* Object();
  // The value at `path` (field names, outermost first), or nullptr.
  const rapidjson::Value* Find(const std::vector<std::string>& path);

 private:
  const Event& event_;
  std::optional<rapidjson::Document> doc_;
};

class EventTemplate {
 public:
  // `what` names the template in errors ("topic template", "measurement").
  static Result<EventTemplate> Parse(std::string_view text, std::string_view what);

  // Writes the text for `event` to `out`; false with `why` set when it cannot be filled.
  bool Render(const Event& event, PayloadView& payload, std::string* out, std::string* why) const;

  // True when no placeholder depends on the event (the text is always the same).
  bool is_constant() const {
    return parts_.size() <= 1 && (parts_.empty() || parts_[0].kind == Kind::kText);
  }
  bool uses_payload() const { return uses_payload_; }
  // The literal text, placeholders left out.
  std::string LiteralText() const;
  // The payload fields its placeholders read, as paths.
  std::vector<std::vector<std::string>> PayloadPaths() const;

 private:
  enum class Kind { kText, kTopic, kTopicLevel, kPayloadField, kHeader };
  struct Part {
    Kind kind = Kind::kText;
    std::string text;               // kText: the text; kHeader: the name
    size_t level = 0;               // kTopicLevel, from 1
    std::vector<std::string> path;  // kPayloadField
  };

  std::string what_;
  std::vector<Part> parts_;
  bool uses_payload_ = false;
};

// A parameter validator: the string value parses as a template (`what` names it in errors).
std::function<Status(const ParamValue&)> TemplateValidator(std::string what);

// The dotted path "a.b.c" as field names; an error names an empty one.
Result<std::vector<std::string>> ParseFieldPath(std::string_view dotted);

}  // namespace seedance::sinks
