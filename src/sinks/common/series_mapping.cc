#include "sinks/common/series_mapping.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "util/strings.h"

namespace seedance::sinks {
namespace {

bool IsAsciiLetter(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }
bool IsDigit(char c) { return c >= '0' && c <= '9'; }

// The JSON value as a label value: a string as it is, a number or boolean as JSON writes it;
// false for an object, an array or null.
bool LabelText(const rapidjson::Value& v, std::string* out) {
  if (v.IsString()) {
    out->assign(v.GetString(), v.GetStringLength());
  } else if (v.IsBool()) {
    *out = v.GetBool() ? "true" : "false";
  } else if (v.IsInt64()) {
    *out = fmt::format("{}", v.GetInt64());
  } else if (v.IsUint64()) {
    *out = fmt::format("{}", v.GetUint64());
  } else if (v.IsDouble()) {
    *out = fmt::format("{}", v.GetDouble());
  } else {
    return false;
  }
  return true;
}

// The JSON value as a sample value; false when it is none.
bool SampleValue(const rapidjson::Value& v, double* out) {
  if (v.IsNumber()) {
    *out = v.GetDouble();
  } else if (v.IsBool()) {
    *out = v.GetBool() ? 1 : 0;
  } else if (v.IsString()) {
    const std::string_view s(v.GetString(), v.GetStringLength());
    if (s == "NaN") {
      *out = std::numeric_limits<double>::quiet_NaN();
    } else if (s == "+Inf" || s == "Inf") {
      *out = std::numeric_limits<double>::infinity();
    } else if (s == "-Inf") {
      *out = -std::numeric_limits<double>::infinity();
    } else {
      return false;
    }
  } else {
    return false;
  }
  return true;
}

// Sorts `labels` by name and keeps, of labels with the same name, the one added last: the
// n log n way (a payload object may hold many thousands of members).
void SortKeepingTheLast(Labels& labels) {
  std::stable_sort(labels.begin(), labels.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  size_t kept = 0;
  for (size_t i = 0; i < labels.size(); ++i) {
    if (i + 1 < labels.size() && labels[i + 1].first == labels[i].first) continue;
    if (kept != i) labels[kept] = std::move(labels[i]);
    ++kept;
  }
  labels.resize(kept);
}

int64_t FloorMs(int64_t ns) {
  int64_t ms = ns / 1000000;
  if (ns % 1000000 < 0) --ms;
  return ms;
}

}  // namespace

bool IsValidMetricName(std::string_view s) {
  if (s.empty() || !(IsAsciiLetter(s[0]) || s[0] == '_' || s[0] == ':')) return false;
  return std::all_of(s.begin(), s.end(),
                     [](char c) { return IsAsciiLetter(c) || IsDigit(c) || c == '_' || c == ':'; });
}

bool IsValidLabelName(std::string_view s) {
  if (s.empty() || !(IsAsciiLetter(s[0]) || s[0] == '_') || s.starts_with("__")) return false;
  return std::all_of(s.begin(), s.end(),
                     [](char c) { return IsAsciiLetter(c) || IsDigit(c) || c == '_'; });
}

Result<SeriesMapping> MakeSeriesMapping(const SeriesMappingConfig& c) {
  SeriesMapping m;
  m.names = c.names;
  const bool prometheus = c.names == MetricNames::kPrometheus;
  SEEDANCE_ASSIGN_OR_RETURN(m.metric, EventTemplate::Parse(c.metric, "metric"));
  for (const std::string& f : c.label_fields) {
    auto path = ParseFieldPath(f);
    if (!path) {
      return InvalidArgumentError(fmt::format("label_fields: \"{}\": {}", util::SanitizeText(f, 64),
                                              path.error().message()));
    }
    m.label_fields.push_back(std::move(*path));
  }
  for (const auto& [name, text] : c.labels) {
    if (prometheus && !IsValidLabelName(name)) {
      return InvalidArgumentError(fmt::format(
          "labels: \"{}\" is not a label name ([a-zA-Z_][a-zA-Z0-9_]*, not starting with __)",
          util::SanitizeText(name, 64)));
    }
    if (!prometheus && (name.empty() || !util::IsValidUtf8(name))) {
      return InvalidArgumentError("labels: a name is empty or not UTF-8");
    }
    auto t = EventTemplate::Parse(text, fmt::format("label {}", name));
    if (!t) return t.error();
    m.labels.emplace_back(name, std::move(*t));
  }
  auto value = ParseFieldPath(c.value);
  if (!value) return InvalidArgumentError("value: " + value.error().message());
  m.value = std::move(*value);
  for (const std::string& f : c.fields) {
    auto path = ParseFieldPath(f);
    if (!path) {
      return InvalidArgumentError(
          fmt::format("fields: \"{}\": {}", util::SanitizeText(f, 64), path.error().message()));
    }
    m.fields.push_back(std::move(*path));
  }
  return m;
}

bool AppendSamples(const SeriesMapping& m, const Event& event, std::vector<SeriesSample>& out,
                   std::string* why) {
  PayloadView payload(event);
  Labels labels;
  std::string text;
  for (const auto& path : m.label_fields) {
    const rapidjson::Value* v = payload.Find(path);
    if (v == nullptr) continue;
    if (v->IsObject()) {
      for (auto it = v->MemberBegin(); it != v->MemberEnd(); ++it) {
        if (!LabelText(it->value, &text)) continue;
        labels.emplace_back(std::string(it->name.GetString(), it->name.GetStringLength()), text);
      }
    } else if (LabelText(*v, &text)) {
      labels.emplace_back(path.back(), text);
    }
  }
  for (const auto& [name, tmpl] : m.labels) {  // after the payload's: they win
    std::string ignored;
    if (tmpl.Render(event, payload, &text, &ignored)) labels.emplace_back(name, text);
  }
  SortKeepingTheLast(labels);
  std::erase_if(labels, [](const auto& l) { return l.second.empty(); });
  const bool prometheus = m.names == MetricNames::kPrometheus;
  for (const auto& [name, value] : labels) {
    if (!prometheus && name == "__name__") {
      *why = "label name __name__ is the series name's";
      return false;
    }
    if (prometheus && !IsValidLabelName(name)) {
      *why = fmt::format(
          "label name \"{}\" is not valid in Prometheus ([a-zA-Z_][a-zA-Z0-9_]*, not starting "
          "with __)",
          util::SanitizeText(name, 128));
      return false;
    }
    if (!util::IsValidUtf8(value)) {
      *why = fmt::format("label {}: the value is not UTF-8", name);
      return false;
    }
  }
  std::string metric;
  std::string metric_why;
  const bool has_metric = m.metric.Render(event, payload, &metric, &metric_why);
  const int64_t timestamp_ms = FloorMs(event.event_time_ns);
  auto sample = [&](std::string name, double value) -> bool {
    if (prometheus && !IsValidMetricName(name)) {
      *why = fmt::format("metric name \"{}\" is not valid in Prometheus ([a-zA-Z_:][a-zA-Z0-9_:]*)",
                         util::SanitizeText(name, 128));
      return false;
    }
    if (!prometheus && (name.empty() || !util::IsValidUtf8(name))) {
      *why = "the metric name is empty or not UTF-8";
      return false;
    }
    SeriesSample s{.labels = labels,
                   .value = value,
                   .timestamp_ms = timestamp_ms,
                   .timestamp_ns = event.event_time_ns};
    // `labels` is sorted and holds no "__name__" (refused above): one insertion.
    const auto at = std::lower_bound(s.labels.begin(), s.labels.end(), std::string_view("__name__"),
                                     [](const auto& l, std::string_view n) { return l.first < n; });
    s.labels.emplace(at, "__name__", std::move(name));
    out.push_back(std::move(s));
    return true;
  };
  const size_t start = out.size();
  double value = 0;
  if (m.fields.empty()) {
    if (!has_metric) {
      *why = metric_why;
      return false;
    }
    const rapidjson::Value* v = payload.Find(m.value);
    if (v == nullptr || !SampleValue(*v, &value)) {
      *why = fmt::format(
          "no value: payload field {} is not a number, a boolean or \"NaN\", \"+Inf\", \"-Inf\"",
          fmt::join(m.value, "."));
      return false;
    }
    return sample(std::move(metric), value);
  }
  for (const auto& path : m.fields) {
    const rapidjson::Value* v = payload.Find(path);
    if (v == nullptr || !SampleValue(*v, &value)) continue;
    const char* separator = prometheus ? "_" : ".";
    std::string name = has_metric ? metric + separator : std::string();
    name += fmt::format("{}", fmt::join(path, separator));
    if (!sample(std::move(name), value)) {
      out.resize(start);
      return false;
    }
  }
  if (out.size() == start) {
    *why = event.format == PayloadFormat::kJson
               ? "no value: no field `fields` names is a number, a boolean or \"NaN\", "
                 "\"+Inf\", \"-Inf\""
               : "no value: the payload is not JSON";
    return false;
  }
  return true;
}

}  // namespace seedance::sinks
