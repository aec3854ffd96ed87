#include "sinks/influxdb/line_protocol.h"

#include <fmt/format.h>

#include <algorithm>

#include "util/strings.h"

namespace seedance::sinks {
namespace {

// Escapes the characters in `special` with a backslash; false for what cannot be carried.
bool AppendEscaped(std::string& out, std::string_view s, std::string_view special) {
  if (s.empty() || s.back() == '\\' || s.find_first_of("\n\r") != std::string_view::npos) {
    return false;
  }
  for (char c : s) {
    if (special.find(c) != std::string_view::npos) out.push_back('\\');
    out.push_back(c);
  }
  return true;
}

std::string DottedPath(const std::vector<std::string>& path) {
  return fmt::format("{}", fmt::join(path, "."));
}

// Appends `v` as a field value; false for an object, an array or null.
bool AppendFieldValue(std::string& out, const rapidjson::Value& v) {
  if (v.IsString()) {
    AppendStringField(out, std::string_view(v.GetString(), v.GetStringLength()));
  } else if (v.IsBool()) {
    out += v.GetBool() ? "true" : "false";
  } else if (v.IsInt64()) {
    fmt::format_to(std::back_inserter(out), "{}", v.GetInt64());
  } else if (v.IsUint64()) {
    fmt::format_to(std::back_inserter(out), "{}", v.GetUint64());
  } else if (v.IsDouble()) {
    // The shortest text that reads back as the same double.
    fmt::format_to(std::back_inserter(out), "{}", v.GetDouble());
  } else {
    return false;
  }
  return true;
}

int64_t InPrecision(int64_t ns, Precision p) {
  switch (p) {
    case Precision::kNanoseconds:
      return ns;
    case Precision::kMicroseconds:
      return ns / 1000;
    case Precision::kMilliseconds:
      return ns / 1000000;
    case Precision::kSeconds:
      return ns / 1000000000;
  }
  return ns;
}

}  // namespace

std::vector<std::pair<std::string, Precision>> PrecisionChoices() {
  return {{"ns", Precision::kNanoseconds},
          {"us", Precision::kMicroseconds},
          {"ms", Precision::kMilliseconds},
          {"s", Precision::kSeconds}};
}

std::string_view PrecisionName(Precision p) {
  switch (p) {
    case Precision::kNanoseconds:
      return "ns";
    case Precision::kMicroseconds:
      return "us";
    case Precision::kMilliseconds:
      return "ms";
    case Precision::kSeconds:
      return "s";
  }
  return "ns";
}

bool AppendMeasurement(std::string& out, std::string_view s) { return AppendEscaped(out, s, ", "); }

bool AppendKey(std::string& out, std::string_view s) { return AppendEscaped(out, s, ",= "); }

void AppendStringField(std::string& out, std::string_view s) {
  out.push_back('"');
  for (char c : s) {
    if (c == '"' || c == '\\') out.push_back('\\');
    out.push_back(c);
  }
  out.push_back('"');
}

Result<PointMapping> MakePointMapping(std::string_view measurement,
                                      const std::vector<std::pair<std::string, std::string>>& tags,
                                      const std::vector<std::string>& fields, Precision precision) {
  PointMapping m;
  m.precision = precision;
  SEEDANCE_ASSIGN_OR_RETURN(m.measurement, EventTemplate::Parse(measurement, "measurement"));
  for (const auto& [key, text] : tags) {
    std::string probe;
    if (!AppendKey(probe, key)) {
      return InvalidArgumentError(
          fmt::format("tag key \"{}\" is empty, ends in a backslash or holds a line break",
                      util::SanitizeText(key, 64)));
    }
    auto t = EventTemplate::Parse(text, fmt::format("tag {}", key));
    if (!t) return t.error();
    for (const auto& path : t->PayloadPaths()) {
      if (path.size() == 1) m.tag_payload_fields.push_back(path[0]);
    }
    m.tags.emplace_back(key, std::move(*t));
  }
  std::sort(m.tags.begin(), m.tags.end(),
            [](const auto& a, const auto& b) { return a.first < b.first; });
  for (const std::string& f : fields) {
    auto path = ParseFieldPath(f);
    if (!path) {
      return InvalidArgumentError(fmt::format("field \"{}\": {}", f, path.error().message()));
    }
    m.fields.push_back(std::move(*path));
  }
  return m;
}

bool AppendPoint(const PointMapping& m, const Event& event, std::string& out, std::string* why) {
  const size_t start = out.size();
  auto fail = [&](std::string reason) {
    out.resize(start);
    *why = std::move(reason);
    return false;
  };
  PayloadView payload(event);
  std::string text;
  if (!m.measurement.Render(event, payload, &text, why)) return fail(*why);
  if (!AppendMeasurement(out, text)) {
    return fail(fmt::format("measurement \"{}\" ends in a backslash or holds a line break",
                            util::SanitizeText(text, 128)));
  }
  for (const auto& [key, tmpl] : m.tags) {
    std::string ignored;
    if (!tmpl.Render(event, payload, &text, &ignored)) continue;  // no value: no tag
    out.push_back(',');
    AppendKey(out, key);  // checked by MakePointMapping
    out.push_back('=');
    if (!AppendKey(out, text)) {
      return fail(fmt::format("tag {}: \"{}\" ends in a backslash or holds a line break", key,
                              util::SanitizeText(text, 128)));
    }
  }
  size_t written = 0;
  auto add_field = [&](std::string_view key, const rapidjson::Value& v) {
    const size_t mark = out.size();
    out.push_back(written == 0 ? ' ' : ',');
    if (!AppendKey(out, key)) {
      out.resize(mark);
      return false;
    }
    out.push_back('=');
    if (!AppendFieldValue(out, v)) {
      out.resize(mark);
      return true;  // an object, array or null is no field value: left out
    }
    ++written;
    return true;
  };
  if (m.fields.empty()) {
    const rapidjson::Value* object = payload.Object();
    if (object != nullptr) {
      for (auto it = object->MemberBegin(); it != object->MemberEnd(); ++it) {
        const std::string_view key(it->name.GetString(), it->name.GetStringLength());
        if (std::find(m.tag_payload_fields.begin(), m.tag_payload_fields.end(), key) !=
            m.tag_payload_fields.end()) {
          continue;  // a tag's value
        }
        if (!add_field(key, it->value)) {
          return fail(fmt::format("field key \"{}\" ends in a backslash or holds a line break",
                                  util::SanitizeText(key, 128)));
        }
      }
    }
  } else {
    for (const auto& path : m.fields) {
      const rapidjson::Value* v = payload.Find(path);
      if (v == nullptr) continue;
      const std::string key = DottedPath(path);
      if (!add_field(key, *v)) {
        return fail(fmt::format("field key \"{}\" ends in a backslash or holds a line break",
                                util::SanitizeText(key, 128)));
      }
    }
  }
  if (written == 0) {
    return fail(event.format == PayloadFormat::kJson
                    ? "no field to write: the payload has no number, boolean or string field "
                      "that `fields` names"
                    : "no field to write: the payload is not JSON");
  }
  fmt::format_to(std::back_inserter(out), " {}\n", InPrecision(event.event_time_ns, m.precision));
  return true;
}

}  // namespace seedance::sinks
