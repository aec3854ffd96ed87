#include "eventtime/key_selector.h"

#include <fmt/format.h>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include <optional>

#include "eventtime/event_time.h"

namespace seedance::eventtime {

namespace {

std::optional<std::string> Find(const KeySelector& k, const Event& event,
                                const rapidjson::Value* payload) {
  if (!k.field.empty()) {
    const rapidjson::Value* v = payload == nullptr ? nullptr : FindField(*payload, k.field);
    if (v == nullptr || v->IsNull() || v->IsObject() || v->IsArray()) return std::nullopt;
    if (v->IsString()) return std::string(v->GetString(), v->GetStringLength());
    rapidjson::StringBuffer buffer;
    rapidjson::Writer<rapidjson::StringBuffer> writer(buffer);
    v->Accept(writer);
    return std::string(buffer.GetString(), buffer.GetSize());
  }
  if (k.topic_level >= 0) {
    size_t start = 0;
    for (int level = 0; level < k.topic_level; ++level) {
      start = event.topic.find('/', start);
      if (start == std::string::npos) return std::nullopt;
      ++start;
    }
    size_t end = event.topic.find('/', start);
    return event.topic.substr(start, end == std::string::npos ? end : end - start);
  }
  return std::string();
}

}  // namespace

Result<std::string> KeySelector::KeyOf(const Event& event, const rapidjson::Value* payload) const {
  std::optional<std::string> key = Find(*this, event, payload);
  if (!key) {
    return Status(StatusCode::kInvalidArgument, fmt::format("no key: {} is missing", Describe()));
  }
  if (key->size() > kMaxKeyBytes) {
    return Status(StatusCode::kInvalidArgument,
                  fmt::format("key of {} bytes ({}) is longer than {} bytes", key->size(),
                              Describe(), kMaxKeyBytes));
  }
  return std::move(*key);
}

std::string KeySelector::Describe() const {
  if (!field.empty()) return fmt::format("payload field \"{}\"", field);
  if (topic_level >= 0) return fmt::format("topic level {}", topic_level);
  return "none";
}

const Options<KeySelector>& KeySelectorSchema() {
  static const Options<KeySelector> o =
      Options<KeySelector>()
          .Add(&KeySelector::field,
               {.name = "key_field",
                .doc = "key from this payload field (dotted path, e.g. device or meta.id)"})
          .Int(&KeySelector::topic_level, {.name = "key_topic_level",
                                           .doc = "key from this topic level, 0-based (-1 = none)",
                                           .default_value = "-1",
                                           .validator = IntInRange(-1, 64)});
  return o;
}

}  // namespace seedance::eventtime
