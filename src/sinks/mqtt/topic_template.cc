#include "sinks/mqtt/topic_template.h"

#include <fmt/format.h>
#include <rapidjson/document.h>

#include <charconv>
#include <optional>

#include "util/strings.h"

namespace seedance::sinks {
namespace {

constexpr size_t kMaxTopicBytes = 65535;

bool HasWildcardOrNul(std::string_view s) {
  return s.find_first_of(std::string_view("+#\0", 3)) != std::string_view::npos;
}

std::vector<std::string> Split(std::string_view s, char sep) {
  std::vector<std::string> out;
  size_t start = 0;
  while (true) {
    size_t end = s.find(sep, start);
    out.emplace_back(s.substr(start, end - start));
    if (end == std::string_view::npos) return out;
    start = end + 1;
  }
}

// The `n`th level of `topic`, from 1; false when it has fewer levels.
bool TopicLevel(std::string_view topic, size_t n, std::string_view* out) {
  size_t start = 0;
  for (size_t i = 1; i < n; ++i) {
    start = topic.find('/', start);
    if (start == std::string_view::npos) return false;
    ++start;
  }
  *out = topic.substr(start, topic.find('/', start) - start);
  return true;
}

}  // namespace

Result<TopicTemplate> TopicTemplate::Parse(std::string_view text) {
  TopicTemplate t;
  auto literal = [&](std::string s) {
    if (!t.parts_.empty() && t.parts_.back().kind == Kind::kText) {
      t.parts_.back().text += s;
    } else {
      t.parts_.push_back(Part{.text = std::move(s)});
    }
  };
  if (text.empty()) return InvalidArgumentError("the topic template is empty");
  if (!util::IsValidUtf8(text)) return InvalidArgumentError("the topic template is not UTF-8");
  size_t i = 0;
  while (i < text.size()) {
    const char c = text[i];
    if (c == '}') {
      if (i + 1 < text.size() && text[i + 1] == '}') {
        literal("}");
        i += 2;
        continue;
      }
      return InvalidArgumentError(
          fmt::format("unmatched '}}' at byte {} (write }}}} for a brace)", i));
    }
    if (c != '{') {
      const size_t next = text.find_first_of("{}", i);
      std::string_view run = text.substr(i, next - i);
      if (HasWildcardOrNul(run)) {
        return InvalidArgumentError(
            "a topic name cannot hold the wildcards + or # (they are for subscriptions) or U+0000");
      }
      literal(std::string(run));
      i = next == std::string_view::npos ? text.size() : next;
      continue;
    }
    if (i + 1 < text.size() && text[i + 1] == '{') {
      literal("{");
      i += 2;
      continue;
    }
    const size_t close = text.find('}', i);
    if (close == std::string_view::npos) {
      return InvalidArgumentError(fmt::format("unclosed '{{' at byte {}", i));
    }
    const std::string_view name = text.substr(i + 1, close - i - 1);
    Part p;
    if (name == "topic") {
      p.kind = Kind::kTopic;
    } else if (name.starts_with("topic.")) {
      const std::string_view n = name.substr(6);
      size_t level = 0;
      auto [end, ec] = std::from_chars(n.data(), n.data() + n.size(), level);
      if (ec != std::errc() || end != n.data() + n.size() || level == 0 || level > 65535) {
        return InvalidArgumentError(fmt::format(
            "{{{}}}: a topic level is a number from 1 ({{topic.1}} is the first level)", name));
      }
      p.kind = Kind::kTopicLevel;
      p.level = level;
    } else if (name.starts_with("payload.") && name.size() > 8) {
      p.kind = Kind::kPayloadField;
      p.path = Split(name.substr(8), '.');
      for (const auto& f : p.path) {
        if (f.empty())
          return InvalidArgumentError(fmt::format("{{{}}}: an empty field name", name));
      }
      t.uses_payload_ = true;
    } else if (name.starts_with("header.") && name.size() > 7) {
      p.kind = Kind::kHeader;
      p.text = std::string(name.substr(7));
    } else {
      return InvalidArgumentError(fmt::format(
          "unknown placeholder {{{}}}: use {{topic}}, {{topic.N}}, {{payload.FIELD}} or "
          "{{header.NAME}}",
          name));
    }
    t.parts_.push_back(std::move(p));
    i = close + 1;
  }
  if (t.is_constant() && t.parts_.empty())
    return InvalidArgumentError("the topic template is empty");
  return t;
}

bool TopicTemplate::Render(const Event& event, std::string* out, std::string* why) const {
  out->clear();
  std::optional<rapidjson::Document> doc;  // parsed on the first payload placeholder only
  for (const Part& p : parts_) {
    std::string_view value;
    std::string number;  // a payload number or boolean, as written
    switch (p.kind) {
      case Kind::kText:
        out->append(p.text);
        continue;
      case Kind::kTopic:
        value = event.topic;
        if (value.empty()) {
          *why = "topic template: the event has no topic";
          return false;
        }
        break;
      case Kind::kTopicLevel:
        if (!TopicLevel(event.topic, p.level, &value)) {
          *why = fmt::format("topic template: topic \"{}\" has no level {}",
                             util::SanitizeText(event.topic, 128), p.level);
          return false;
        }
        break;
      case Kind::kHeader: {
        const std::string* h = event.FindHeader(p.text);
        if (h == nullptr) {
          *why = fmt::format("topic template: the event has no header \"{}\"", p.text);
          return false;
        }
        value = *h;
        break;
      }
      case Kind::kPayloadField: {
        if (!doc) {
          doc.emplace();
          if (event.format == PayloadFormat::kJson) {
            // Iterative: a hostile depth costs heap, not stack.
            doc->Parse<rapidjson::kParseIterativeFlag>(event.payload.data(), event.payload.size());
          }
        }
        const rapidjson::Value* v = doc->HasParseError() || !doc->IsObject() ? nullptr : &*doc;
        for (const auto& f : p.path) {
          if (v == nullptr || !v->IsObject()) {
            v = nullptr;
            break;
          }
          auto it = v->FindMember(rapidjson::StringRef(f.data(), f.size()));
          v = it == v->MemberEnd() ? nullptr : &it->value;
        }
        auto field = [&p] { return fmt::format("payload.{}", fmt::join(p.path, ".")); };
        if (v == nullptr) {
          *why = fmt::format("topic template: the payload has no field {}", field());
          return false;
        }
        if (v->IsString()) {
          value = std::string_view(v->GetString(), v->GetStringLength());
        } else if (v->IsBool()) {
          value = v->GetBool() ? "true" : "false";
        } else if (v->IsInt64()) {
          number = std::to_string(v->GetInt64());
          value = number;
        } else if (v->IsUint64()) {
          number = std::to_string(v->GetUint64());
          value = number;
        } else if (v->IsDouble()) {
          number = fmt::format("{}", v->GetDouble());
          value = number;
        } else {
          *why = fmt::format("topic template: {} is not a string, number or boolean", field());
          return false;
        }
        break;
      }
    }
    if (value.empty()) {
      *why = "topic template: an empty value would leave an empty topic level";
      return false;
    }
    out->append(value);
  }
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
