#include "sinks/otlp/otlp_request.h"

#include <fmt/format.h>
#include <rapidjson/document.h>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include <algorithm>
#include <cctype>
#include <string_view>
#include <unordered_map>

#include "util/otlp_common.h"
#include "util/protobuf_reader.h"
#include "util/protobuf_writer.h"
#include "util/strings.h"
#include "util/trace_context.h"

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

using util::AppendOtlpStringKeyValue;

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
  for (const auto& [k, v] : resource) AppendOtlpStringKeyValue(w, 1, k, v);
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

// The extra attributes the sink adds to a record or span: attribute_fields, then attributes.
void AppendMappedAttributes(ProtobufWriter& w, uint32_t field, const Event& e, PayloadView& payload,
                            const LogMapping& m) {
  for (const auto& path : m.attribute_fields) {
    const rapidjson::Value* v = payload.Find(path);
    if (v == nullptr) continue;
    if (v->IsObject()) {
      for (auto it = v->MemberBegin(); it != v->MemberEnd(); ++it) {
        AppendKeyValue(w, field, std::string_view(it->name.GetString(), it->name.GetStringLength()),
                       it->value, 1);
      }
    } else {
      AppendKeyValue(w, field, path.back(), *v, 1);
    }
  }
  std::string text, ignored;
  for (const auto& [key, tmpl] : m.attributes) {
    if (tmpl.Render(e, payload, &text, &ignored) && !text.empty()) {
      AppendOtlpStringKeyValue(w, field, key, text);
    }
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
  AppendOtlpStringKeyValue(w, 6, "messaging.destination.name", e.topic);
  AppendOtlpStringKeyValue(w, 6, "seedance.source", e.source);
  AppendMappedAttributes(w, 6, e, payload, m);
  if (auto trace = util::EventTraceContext(e)) {
    w.Fixed32(8, trace->flags);
    w.Bytes(9, std::string_view(reinterpret_cast<const char*>(trace->trace_id.data()), 16));
    w.Bytes(10, std::string_view(reinterpret_cast<const char*>(trace->span_id.data()), 8));
  }
  w.EndMessage(record);
}

// An object's members as KeyValue messages in field `field`.
void AppendObjectAttributes(ProtobufWriter& w, uint32_t field, const rapidjson::Value* object) {
  if (object == nullptr || !object->IsObject()) return;
  for (auto it = object->MemberBegin(); it != object->MemberEnd(); ++it) {
    AppendKeyValue(w, field, std::string_view(it->name.GetString(), it->name.GetStringLength()),
                   it->value, 1);
  }
}

const rapidjson::Value* Member(const rapidjson::Value& object, const char* name) {
  auto it = object.FindMember(name);
  return it == object.MemberEnd() || it->value.IsNull() ? nullptr : &it->value;
}

std::string_view StringOf(const rapidjson::Value* v) {
  return v != nullptr && v->IsString() ? std::string_view(v->GetString(), v->GetStringLength())
                                       : std::string_view();
}

// `bytes` bytes as hex digits (either case) into `out`; false for anything else.
bool HexBytes(std::string_view hex, size_t bytes, std::string* out) {
  return hex.size() == 2 * bytes && util::DecodeHex(hex, out);
}

// An enum given as its name in `names` (index = value) or as a number; -1 when neither.
template <size_t N>
int64_t EnumOf(const rapidjson::Value* v, const char* const (&names)[N]) {
  if (v == nullptr) return -1;
  if (v->IsInt64()) return v->GetInt64();
  const std::string_view text = StringOf(v);
  for (size_t i = 0; i < N; ++i) {
    if (text == names[i]) return static_cast<int64_t>(i);
  }
  return -1;
}

uint64_t TimeOf(const rapidjson::Value* v, int64_t fallback) {
  if (v != nullptr && v->IsUint64()) return v->GetUint64();
  return static_cast<uint64_t>(fallback);
}

// One Span (ScopeSpans.spans, field 2) from a span payload; false with `why` when the payload
// is not one.
bool AppendSpan(ProtobufWriter& w, const Event& e, PayloadView& payload, const LogMapping& m,
                std::string* why) {
  static constexpr const char* kKinds[] = {"unspecified", "internal", "server",
                                           "client",      "producer", "consumer"};
  static constexpr const char* kCodes[] = {"unset", "ok", "error"};
  const rapidjson::Value* span = payload.Object();
  std::string trace_id, span_id, bytes;
  if (span == nullptr || !HexBytes(StringOf(Member(*span, "trace_id")), 16, &trace_id) ||
      !HexBytes(StringOf(Member(*span, "span_id")), 8, &span_id)) {
    *why = "otlp: not a span (trace_id and span_id are needed, as 32 and 16 hex digits)";
    return false;
  }
  const size_t s = w.BeginMessage(2);
  w.Bytes(1, trace_id);
  w.Bytes(2, span_id);
  if (auto state = StringOf(Member(*span, "trace_state")); !state.empty()) w.Bytes(3, state);
  if (HexBytes(StringOf(Member(*span, "parent_span_id")), 8, &bytes)) w.Bytes(4, bytes);
  if (const rapidjson::Value* flags = Member(*span, "flags"); flags && flags->IsUint()) {
    w.Fixed32(16, flags->GetUint());
  }
  const rapidjson::Value* name = Member(*span, "name");
  w.Bytes(5, name != nullptr && name->IsString() ? StringOf(name) : std::string_view(e.topic));
  if (const int64_t kind = EnumOf(Member(*span, "kind"), kKinds); kind > 0) {
    w.Varint(6, static_cast<uint64_t>(kind));
  }
  w.Fixed64(7, TimeOf(Member(*span, "start_time_unix_nano"), e.event_time_ns));
  w.Fixed64(8, TimeOf(Member(*span, "end_time_unix_nano"), e.event_time_ns));
  AppendObjectAttributes(w, 9, Member(*span, "attributes"));
  AppendMappedAttributes(w, 9, e, payload, m);
  if (const rapidjson::Value* events = Member(*span, "events"); events && events->IsArray()) {
    for (const auto& ev : events->GetArray()) {
      if (!ev.IsObject()) continue;
      const size_t event = w.BeginMessage(11);
      w.Fixed64(1, TimeOf(Member(ev, "time_unix_nano"), e.event_time_ns));
      w.Bytes(2, StringOf(Member(ev, "name")));
      AppendObjectAttributes(w, 3, Member(ev, "attributes"));
      w.EndMessage(event);
    }
  }
  if (const rapidjson::Value* links = Member(*span, "links"); links && links->IsArray()) {
    for (const auto& link : links->GetArray()) {
      std::string link_trace, link_span;
      if (!link.IsObject() || !HexBytes(StringOf(Member(link, "trace_id")), 16, &link_trace) ||
          !HexBytes(StringOf(Member(link, "span_id")), 8, &link_span)) {
        continue;  // a link without ids links nothing
      }
      const size_t l = w.BeginMessage(13);
      w.Bytes(1, link_trace);
      w.Bytes(2, link_span);
      if (auto state = StringOf(Member(link, "trace_state")); !state.empty()) w.Bytes(3, state);
      AppendObjectAttributes(w, 4, Member(link, "attributes"));
      w.EndMessage(l);
    }
  }
  if (const rapidjson::Value* status = Member(*span, "status"); status && status->IsObject()) {
    const size_t st = w.BeginMessage(15);
    if (auto message = StringOf(Member(*status, "message")); !message.empty()) {
      w.Bytes(2, message);
    }
    if (const int64_t code = EnumOf(Member(*status, "code"), kCodes); code > 0) {
      w.Varint(3, static_cast<uint64_t>(code));
    }
    w.EndMessage(st);
  }
  w.EndMessage(s);
  return true;
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

void AppendTracesRequest(const Batch& batch, const LogMapping& m,
                         const ResourceAttributes& resource, std::string& out,
                         std::vector<RejectedEvent>& unwritable) {
  // Spans grouped by the payload's resource and scope (as their JSON text), in the order each
  // group first appears.
  struct Group {
    const rapidjson::Value* resource = nullptr;  // null: the sink's
    const rapidjson::Value* scope = nullptr;     // null: seedance's
    std::vector<size_t> events;
  };
  std::vector<PayloadView> payloads;
  payloads.reserve(batch.events.size());
  std::vector<Group> groups;
  std::unordered_map<std::string, size_t> index;
  std::string key;
  for (size_t i = 0; i < batch.events.size(); ++i) {
    PayloadView& payload = payloads.emplace_back(batch.events[i]);
    const rapidjson::Value* object = payload.Object();
    Group g;
    if (object != nullptr) {
      g.resource = Member(*object, "resource");
      g.scope = Member(*object, "scope");
    }
    key.clear();
    for (const rapidjson::Value* v : {g.resource, g.scope}) {
      if (v != nullptr) {
        rapidjson::StringBuffer text;
        rapidjson::Writer<rapidjson::StringBuffer> writer(text);
        v->Accept(writer);
        key.append(text.GetString(), text.GetSize());
      }
      key.push_back('\0');
    }
    auto [it, added] = index.try_emplace(key, groups.size());
    if (added) groups.push_back(g);
    groups[it->second].events.push_back(i);
  }
  ProtobufWriter w(out);
  std::string why;
  for (const Group& g : groups) {
    const size_t resource_spans = w.BeginMessage(1);
    const size_t r = w.BeginMessage(1);
    if (g.resource != nullptr && g.resource->IsObject()) {
      AppendObjectAttributes(w, 1, g.resource);
    } else {
      for (const auto& [k, v] : resource) AppendOtlpStringKeyValue(w, 1, k, v);
    }
    w.EndMessage(r);
    const size_t scope_spans = w.BeginMessage(2);
    const size_t scope = w.BeginMessage(1);
    if (g.scope != nullptr && g.scope->IsObject()) {
      w.Bytes(1, StringOf(Member(*g.scope, "name")));
      w.Bytes(2, StringOf(Member(*g.scope, "version")));
      AppendObjectAttributes(w, 3, Member(*g.scope, "attributes"));
    } else {
      w.Bytes(1, "seedance");
      w.Bytes(2, SEEDANCE_VERSION);
    }
    w.EndMessage(scope);
    for (size_t i : g.events) {
      if (!AppendSpan(w, batch.events[i], payloads[i], m, &why)) unwritable.push_back({i, why});
    }
    w.EndMessage(scope_spans);
    w.EndMessage(resource_spans);
  }
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
        if (k != "__name__") AppendOtlpStringKeyValue(w, 7, k, v);
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
