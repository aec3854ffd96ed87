#include "sinks/mqtt/topic_template.h"

#include <fmt/format.h>

#include "util/strings.h"

namespace seedance::sinks {
namespace {

constexpr size_t kMaxTopicBytes = 65535;

bool HasWildcardOrNul(std::string_view s) {
  return s.find_first_of(std::string_view("+#\0", 3)) != std::string_view::npos;
}

}  // namespace

Result<TopicTemplate> TopicTemplate::Parse(std::string_view text) {
  if (text.find('\0') != std::string_view::npos) {
    return InvalidArgumentError(
        "a topic name cannot hold the wildcards + or # (they are for subscriptions) or U+0000");
  }
  TopicTemplate t;
  SEEDANCE_ASSIGN_OR_RETURN(t.template_, EventTemplate::Parse(text, "topic template"));
  if (HasWildcardOrNul(t.template_.LiteralText())) {
    return InvalidArgumentError(
        "a topic name cannot hold the wildcards + or # (they are for subscriptions) or U+0000");
  }
  return t;
}

bool TopicTemplate::Render(const Event& event, std::string* out, std::string* why) const {
  PayloadView payload(event);
  if (!template_.Render(event, payload, out, why)) return false;
  if (HasWildcardOrNul(*out) || !util::IsValidUtf8(*out)) {
    *why = fmt::format(
        "topic template: \"{}\" is not a valid topic name (a wildcard, U+0000 or "
        "bytes that are not UTF-8)",
        util::SanitizeText(*out, 128));
    return false;
  }
  if (out->size() > kMaxTopicBytes) {
    *why = fmt::format("topic template: the topic would be {} bytes (at most 65535)", out->size());
    return false;
  }
  return true;
}

}  // namespace seedance::sinks
