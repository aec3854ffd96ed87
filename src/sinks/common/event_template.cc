#include "sinks/common/event_template.h"

#include <fmt/format.h>

#include <charconv>

#include "util/strings.h"

namespace seedance::sinks {
namespace {

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

Result<std::vector<std::string>> ParseFieldPath(std::string_view dotted) {
  std::vector<std::string> out;
  size_t start = 0;
  while (true) {
    const size_t end = dotted.find('.', start);
    out.emplace_back(dotted.substr(start, end - start));
    if (out.back().empty()) return InvalidArgumentError("an empty field name");
    if (end == std::string_view::npos) return out;
    start = end + 1;
  }
}

const rapidjson::Value* PayloadView::Object() {
  if (!doc_) {
    doc_.emplace();
    if (event_.format == PayloadFormat::kJson) {
      // Iterative: a hostile depth costs heap, not stack.
      doc_->Parse<rapidjson::kParseIterativeFlag>(event_.payload.data(), event_.payload.size());
    }
  }
  return doc_->HasParseError() || !doc_->IsObject() ? nullptr : &*doc_;
}

const rapidjson::Value* PayloadView::Find(const std::vector<std::string>& path) {
  const rapidjson::Value* v = Object();
  for (const auto& f : path) {
    if (v == nullptr || !v->IsObject()) return nullptr;
    auto it = v->FindMember(rapidjson::StringRef(f.data(), f.size()));
    v = it == v->MemberEnd() ? nullptr : &it->value;
  }
  return v;
}

std::string EventTemplate::LiteralText() const {
  std::string s;
  for (const Part& p : parts_) {
    if (p.kind == Kind::kText) s += p.text;
  }
  return s;
}

std::vector<std::vector<std::string>> EventTemplate::PayloadPaths() const {
  std::vector<std::vector<std::string>> paths;
  for (const Part& p : parts_) {
    if (p.kind == Kind::kPayloadField) paths.push_back(p.path);
  }
  return paths;
}

Result<EventTemplate> EventTemplate::Parse(std::string_view text, std::string_view what) {
  EventTemplate t;
  t.what_ = std::string(what);
  auto literal = [&](std::string s) {
    if (!t.parts_.empty() && t.parts_.back().kind == Kind::kText) {
      t.parts_.back().text += s;
    } else {
      t.parts_.push_back(Part{.text = std::move(s)});
    }
  };
  if (text.empty()) return InvalidArgumentError(fmt::format("the {} is empty", what));
  if (!util::IsValidUtf8(text))
    return InvalidArgumentError(fmt::format("the {} is not UTF-8", what));
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
      if (run.find('\0') != std::string_view::npos) {
        return InvalidArgumentError(fmt::format("the {} holds U+0000", what));
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
      auto path = ParseFieldPath(name.substr(8));
      if (!path)
        return InvalidArgumentError(fmt::format("{{{}}}: {}", name, path.error().message()));
      p.path = std::move(*path);
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
    return InvalidArgumentError(fmt::format("the {} is empty", what));
  return t;
}

bool EventTemplate::Render(const Event& event, PayloadView& payload, std::string* out,
                           std::string* why) const {
  out->clear();
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
          *why = fmt::format("{}: the event has no topic", what_);
          return false;
        }
        break;
      case Kind::kTopicLevel:
        if (!TopicLevel(event.topic, p.level, &value)) {
          *why = fmt::format("{}: topic \"{}\" has no level {}", what_,
                             util::SanitizeText(event.topic, 128), p.level);
          return false;
        }
        break;
      case Kind::kHeader: {
        const std::string* h = event.FindHeader(p.text);
        if (h == nullptr) {
          *why = fmt::format("{}: the event has no header \"{}\"", what_, p.text);
          return false;
        }
        value = *h;
        break;
      }
      case Kind::kPayloadField: {
        const rapidjson::Value* v = payload.Find(p.path);
        auto field = [&p] { return fmt::format("payload.{}", fmt::join(p.path, ".")); };
        if (v == nullptr) {
          *why = fmt::format("{}: the payload has no field {}", what_, field());
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
          *why = fmt::format("{}: {} is not a string, number or boolean", what_, field());
          return false;
        }
        break;
      }
    }
    if (value.empty()) {
      *why = fmt::format("{}: a placeholder's value is empty", what_);
      return false;
    }
    out->append(value);
  }
  return true;
}

std::function<Status(const ParamValue&)> TemplateValidator(std::string what) {
  return [what = std::move(what)](const ParamValue& v) {
    return EventTemplate::Parse(std::get<std::string>(v), what).status();
  };
}

}  // namespace seedance::sinks
