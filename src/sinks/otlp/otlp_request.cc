#include "sinks/otlp/otlp_request.h"

#include <fmt/format.h>
#include <rapidjson/document.h>

#include <algorithm>
#include <cctype>
#include <string_view>
#include <unordered_map>

#include "sinks/common/trace_context.h"
#include "util/protobuf_reader.h"
#include "util/protobuf_writer.h"
#include "util/strings.h"

namespace seedance::sinks {
namespace {

using util::ProtobufWriter;

// Deeper JSON is written as an empty value. Ingest bounds a payload's nesting at 128
// (util/json_check.h), so this only guards the recursion.
constexpr int kMaxDepth = 130;

void AppendAnyValue(ProtobufWriter& w, uint32_t field, const rapidjson::Value& v, int depth);

void AppendKeyValue(ProtobufWriter& w, uint32_t field, std::string_view key,
                    const rapidjson::Value& v, int depth) {
  const size_t kv = w.BeginMessage(field);
  w.Bytes(1, key);
  AppendAnyValue(w, 2, v, depth);
  w.EndMessage(kv);
}

void AppendStringKeyValue(ProtobufWriter& w, uint32_t field, std::string_view key,
                          std::string_view value) {
  const size_t kv = w.BeginMessage(field);
  w.Bytes(1, key);
  const size_t any = w.BeginMessage(2);
  w.Bytes(1, value);  // AnyValue.string_value
  w.EndMessage(any);
  w.EndMessage(kv);
}

void AppendAnyValue(ProtobufWriter& w, uint32_t field, const rapidjson::Value& v, int depth) {
  const size_t any = w.BeginMessage(field);
  if (depth < kMaxDepth) {
    if (v.IsString()) {
      w.Bytes(1, std::string_view(v.GetString(), v.GetStringLength()));
    } else if (v.IsBool()) {
      w.Varint(2, v.GetBool() ? 1 : 0);
    } else if (v.IsInt64()) {
      w.Int64(3, v.GetInt64());
    } else if (v.IsNumber()) {
      w.Double(4, v.GetDouble());
    } else if (v.IsArray()) {
      const size_t array = w.BeginMessage(5);
      for (const auto& item : v.GetArray()) AppendAnyValue(w, 1, item, depth + 1);
      w.EndMessage(array);
    } else if (v.IsObject()) {
      const size_t list = w.BeginMessage(6);
      for (auto it = v.MemberBegin(); it != v.MemberEnd(); ++it) {
        AppendKeyValue(w, 1, std::string_view(it->name.GetString(), it->name.GetStringLength()),
                       it->value, depth + 1);
      }
      w.EndMessage(list);
    }  // null: no value set
  }
  w.EndMessage(any);
}

void AppendResourceAndScopeStart(ProtobufWriter& w, const ResourceAttributes& resource,
                                 size_t* resource_message, size_t* scope_message) {
  *resource_message = w.BeginMessage(1);  // resource_logs / resource_metrics
  const size_t r = w.BeginMessage(1);     // Resource
  for (const auto& [k, v] : resource) AppendStringKeyValue(w, 1, k, v);
  w.EndMessage(r);
  *scope_message = w.BeginMessage(2);  // scope_logs / scope_metrics
  const size_t scope = w.BeginMessage(1);
  w.Bytes(1, "seedance");
  w.Bytes(2, SEEDANCE_VERSION);
  w.EndMessage(scope);
}

void AppendSeverity(ProtobufWriter& w, const rapidjson::Value& v) {
  if (v.IsString()) {
    const std::string_view text(v.GetString(), v.GetStringLength());
    if (const int n = SeverityNumber(text); n > 0) w.Varint(2, static_cast<uint64_t>(n));
    w.Bytes(3, text);
  } else if (v.IsInt() && v.GetInt() >= 1 && v.GetInt() <= 24) {
    w.Varint(2, static_cast<uint64_t>(v.GetInt()));
  }
}

void AppendLogRecord(ProtobufWriter& w, const Event& e, const LogMapping& m) {
  const size_t record = w.BeginMessage(2);  // ScopeLogs.log_records
  w.Fixed64(1, static_cast<uint64_t>(e.event_time_ns));
  w.Fixed64(11, static_cast<uint64_t>(e.ingest_time_ns));
  PayloadView payload(e);
  const rapidjson::Value* object = e.format == PayloadFormat::kJson ? payload.Object() : nullptr;
  rapidjson::Document whole;  // a JSON payload that is not an object
  if (!m.severity_field.empty()) {
    if (const rapidjson::Value* v = payload.Find(m.severity_field)) AppendSeverity(w, *v);
  }
  const rapidjson::Value* body = nullptr;
  if (!m.body_field.empty()) {
    body = payload.Find(m.body_field);
  } else if (object != nullptr) {
    body = object;
  } else if (e.format == PayloadFormat::kJson) {
    whole.Parse(e.payload.data(), e.payload.size());
    if (!whole.HasParseError()) body = &whole;
  }
  if (body != nullptr) {
    AppendAnyValue(w, 5, *body, 0);
  } else if (m.body_field.empty()) {
    const size_t any = w.BeginMessage(5);
    if (util::IsValidUtf8(e.payload)) {
      w.Bytes(1, e.payload);
    } else {
      w.Bytes(7, e.payload);  // bytes_value
    }
    w.EndMessage(any);
  }
  AppendStringKeyValue(w, 6, "messaging.destination.name", e.topic);
  AppendStringKeyValue(w, 6, "seedance.source", e.source);
  for (const auto& path : m.attribute_fields) {
    const rapidjson::Value* v = payload.Find(path);
    if (v == nullptr) continue;
    if (v->IsObject()) {
      for (auto it = v->MemberBegin(); it != v->MemberEnd(); ++it) {
        AppendKeyValue(w, 6, std::string_view(it->name.GetString(), it->name.GetStringLength()),
                       it->value, 1);
      }
    } else {
      AppendKeyValue(w, 6, path.back(), *v, 1);
    }
  }
  std::string text, ignored;
  for (const auto& [key, tmpl] : m.attributes) {
    if (tmpl.Render(e, payload, &text, &ignored) && !text.empty()) {
      AppendStringKeyValue(w, 6, key, text);
    }
  }
  if (auto trace = EventTraceContext(e)) {
    w.Fixed32(8, trace->flags);
    w.Bytes(9, std::string_view(reinterpret_cast<const char*>(trace->trace_id.data()), 16));
    w.Bytes(10, std::string_view(reinterpret_cast<const char*>(trace->span_id.data()), 8));
  }
  w.EndMessage(record);
}

bool ContentTypeIsJson(std::string_view content_type) {
  return content_type.find("json") != std::string_view::npos;
}

}  // namespace

int SeverityNumber(std::string_view level) {
  std::string lower(level.substr(0, 16));
  std::transform(lower.begin(), lower.end(), lower.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  static constexpr std::pair<std::string_view, int> kLevels[] = {
      {"trace", 1},    {"debug", 5},  {"info", 9}, {"information", 9}, {"warn", 13},
      {"warning", 13}, {"error", 17}, {"err", 17}, {"fatal", 21},      {"critical", 21}};
  for (const auto& [word, n] : kLevels) {
    if (lower == word) return n;
  }
  return 0;
}

void AppendLogsRequest(const Batch& batch, const LogMapping& m, const ResourceAttributes& resource,
                       std::string& out) {
  ProtobufWriter w(out);
  size_t resource_logs = 0, scope_logs = 0;
  AppendResourceAndScopeStart(w, resource, &resource_logs, &scope_logs);
  for (const Event& e : batch.events) AppendLogRecord(w, e, m);
  w.EndMessage(scope_logs);
  w.EndMessage(resource_logs);
}

void AppendMetricsRequest(const std::vector<SeriesSample>& samples,
                          const ResourceAttributes& resource, std::string& out) {
  // The samples of each name, in the order the names first appear.
  std::vector<std::pair<std::string_view, std::vector<size_t>>> metrics;
  std::unordered_map<std::string_view, size_t> index;
  for (size_t i = 0; i < samples.size(); ++i) {
    std::string_view name;
    for (const auto& [k, v] : samples[i].labels) {
      if (k == "__name__") name = v;
    }
    auto [it, added] = index.try_emplace(name, metrics.size());
    if (added) metrics.emplace_back(name, std::vector<size_t>{});
    metrics[it->second].second.push_back(i);
  }
  ProtobufWriter w(out);
  size_t resource_metrics = 0, scope_metrics = 0;
  AppendResourceAndScopeStart(w, resource, &resource_metrics, &scope_metrics);
  for (const auto& [name, members] : metrics) {
    const size_t metric = w.BeginMessage(2);  // ScopeMetrics.metrics
    w.Bytes(1, name);
    const size_t gauge = w.BeginMessage(5);
    for (size_t i : members) {
      const size_t point = w.BeginMessage(1);
      for (const auto& [k, v] : samples[i].labels) {
        if (k != "__name__") AppendStringKeyValue(w, 7, k, v);
      }
      w.Fixed64(3, static_cast<uint64_t>(samples[i].timestamp_ns));
      w.Double(4, samples[i].value);
      w.EndMessage(point);
    }
    w.EndMessage(gauge);
    w.EndMessage(metric);
  }
  w.EndMessage(scope_metrics);
  w.EndMessage(resource_metrics);
}

OtlpAnswer ReadOtlpAnswer(std::string_view body, std::string_view content_type, bool error) {
  OtlpAnswer a;
  if (ContentTypeIsJson(content_type)) {
    rapidjson::Document d;
    d.Parse(body.data(), body.size());
    if (d.HasParseError() || !d.IsObject()) return a;
    const rapidjson::Value* from = &d;
    if (!error) {
      auto p = d.FindMember("partialSuccess");
      if (p == d.MemberEnd() || !p->value.IsObject()) return a;
      from = &p->value;
      for (const char* key : {"rejectedLogRecords", "rejectedDataPoints", "rejectedSpans"}) {
        auto r = from->FindMember(key);
        if (r == from->MemberEnd()) continue;
        if (r->value.IsInt64()) a.rejected = r->value.GetInt64();
        if (r->value.IsString()) a.rejected = std::atoll(r->value.GetString());  // int64 as text
      }
    }
    auto m = from->FindMember(error ? "message" : "errorMessage");
    if (m != from->MemberEnd() && m->value.IsString()) {
      a.message = util::SanitizeText(m->value.GetString(), 300);
    }
    return a;
  }
  util::ProtobufReader r(body);
  util::ProtobufField f;
  if (error) {  // google.rpc.Status: code = 1, message = 2
    while (r.Next(&f)) {
      if (f.number == 2 && f.wire_type == 2) a.message = util::SanitizeText(f.bytes, 300);
    }
    return a;
  }
  while (r.Next(&f)) {
    if (f.number != 1 || f.wire_type != 2) continue;  // partial_success
    util::ProtobufReader p(f.bytes);
    util::ProtobufField g;
    while (p.Next(&g)) {
      if (g.number == 1 && g.wire_type == 0) a.rejected = static_cast<int64_t>(g.number_value);
      if (g.number == 2 && g.wire_type == 2) a.message = util::SanitizeText(g.bytes, 300);
    }
  }
  return a;
}

}  // namespace seedance::sinks
