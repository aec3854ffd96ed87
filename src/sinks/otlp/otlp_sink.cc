#include "sinks/otlp/otlp_sink.h"

#include <fmt/format.h>

#include <optional>
#include <tuple>

#include "http/url.h"
#include "observe/metrics.h"
#include "seedance/options.h"
#include "sinks/common/http_batch_sink.h"
#include "sinks/otlp/otlp_request.h"
#include "util/log.h"

namespace seedance::sinks {
namespace {

enum class Signal { kLogs, kMetrics, kTraces };

struct OtlpOptions : HttpBatchOptions {
  Signal signal = Signal::kLogs;
  StringPairs resource;
  std::string body_field;
  std::string severity_field;
  std::optional<std::vector<std::string>> attribute_fields;
  StringPairs attributes;
  std::string metric = "{payload.name}";
  std::string value = "value";
  std::vector<std::string> fields;
};

class OtlpCodec final : public HttpBatchCodec {
 public:
  OtlpCodec(Signal signal, LogMapping logs, SeriesMapping metrics, ResourceAttributes resource,
            observe::Counter* rejected, std::string name)
      : signal_(signal),
        logs_(std::move(logs)),
        metrics_(std::move(metrics)),
        resource_(std::move(resource)),
        rejected_(rejected),
        name_(std::move(name)) {}

  std::string_view Encode(const Batch& batch, std::string& body,
                          std::vector<RejectedEvent>& unwritable) const override {
    if (signal_ == Signal::kLogs) {
      AppendLogsRequest(batch, logs_, resource_, body);
    } else if (signal_ == Signal::kTraces) {
      AppendTracesRequest(batch, logs_, resource_, body, unwritable);
    } else {
      samples_.clear();
      std::string why;
      for (size_t i = 0; i < batch.events.size(); ++i) {
        if (!AppendSamples(metrics_, batch.events[i], samples_, &why)) {
          unwritable.push_back({i, "otlp: " + why});
        }
      }
      AppendMetricsRequest(samples_, resource_, body);
      if (samples_.capacity() > 8192) samples_ = {};
    }
    return "application/x-protobuf";
  }

  AttemptOutcome Outcome(const Batch& batch, const http::Answer& a) const override {
    if (a.status >= 200 && a.status < 300) {
      const OtlpAnswer answer = ReadOtlpAnswer(a.body, a.content_type, /*error=*/false);
      if (answer.rejected <= 0) return AttemptOutcome::Delivered();
      if (signal_ != Signal::kMetrics &&
          answer.rejected >= static_cast<int64_t>(batch.events.size())) {
        return AttemptOutcome::Rejected(
            fmt::format("otlp: the receiver rejected every record: {}", answer.message));
      }
      rejected_->Add(static_cast<uint64_t>(answer.rejected));
      uint64_t suppressed = 0;
      if (limiter_.Allow("partial", &suppressed)) {
        SEEDANCE_LOG_WARN(name_,
                          "the receiver rejected {} of {} records without naming them ({}); "
                          "counted in seedance_otlp_rejected_records_total, the rest delivered",
                          answer.rejected, batch.events.size(), answer.message);
      }
      return AttemptOutcome::Delivered();
    }
    // Only 429, 502, 503 and 504 may be retried (OTLP/HTTP, "Retryable Response Codes").
    if (a.status == 429 || a.status == 502 || a.status == 503 || a.status == 504) {
      return HttpBatchCodec::Outcome(batch, a);
    }
    if (a.status >= 500) return HttpBatchCodec::Outcome(batch, a);  // as any HTTP sink: retried
    const OtlpAnswer answer = ReadOtlpAnswer(a.body, a.content_type, /*error=*/true);
    return AttemptOutcome::Rejected(fmt::format(
        "otlp: HTTP {}{}{}", a.status, answer.message.empty() ? "" : ": ", answer.message));
  }

 private:
  Signal signal_;
  LogMapping logs_;
  SeriesMapping metrics_;
  ResourceAttributes resource_;
  observe::Counter* rejected_;
  std::string name_;
  mutable util::LogLimiter limiter_;
  mutable std::vector<SeriesSample> samples_;  // storage reused (the event loop's alone)
};

// `<endpoint>/v1/<signal>` unless the endpoint has a path of its own.
std::string SignalUrl(const std::string& endpoint, Signal signal) {
  auto url = http::ParseUrl(endpoint);
  if (!url || url->target != "/") return endpoint;
  std::string base = endpoint;
  while (base.ends_with('/')) base.pop_back();
  return base + (signal == Signal::kLogs      ? "/v1/logs"
                 : signal == Signal::kMetrics ? "/v1/metrics"
                                              : "/v1/traces");
}

Result<std::vector<std::vector<std::string>>> Paths(const std::vector<std::string>& dotted,
                                                    std::string_view key) {
  std::vector<std::vector<std::string>> out;
  for (const std::string& f : dotted) {
    auto path = ParseFieldPath(f);
    if (!path) return InvalidArgumentError(fmt::format("{}: {}", key, path.error().message()));
    out.push_back(std::move(*path));
  }
  return out;
}

struct Mappings {
  LogMapping logs;
  SeriesMapping metrics;
  ResourceAttributes resource;
};

Result<Mappings> MakeMappings(const OtlpOptions& o) {
  Mappings m;
  m.resource = o.resource;
  if (std::none_of(m.resource.begin(), m.resource.end(),
                   [](const auto& kv) { return kv.first == "service.name"; })) {
    m.resource.emplace_back("service.name", "seedance");
  }
  for (auto [text, path, key] :
       {std::tuple{&o.body_field, &m.logs.body_field, "body_field"},
        std::tuple{&o.severity_field, &m.logs.severity_field, "severity_field"}}) {
    if (text->empty()) continue;
    auto parsed = ParseFieldPath(*text);
    if (!parsed) return InvalidArgumentError(fmt::format("{}: {}", key, parsed.error().message()));
    *path = std::move(*parsed);
  }
  const std::vector<std::string> metric_fields = {"labels", "instance", "job"};
  SEEDANCE_ASSIGN_OR_RETURN(
      m.logs.attribute_fields,
      Paths(o.attribute_fields.value_or(std::vector<std::string>{}), "attribute_fields"));
  for (const auto& [key, text] : o.attributes) {
    if (key.empty()) return InvalidArgumentError("attributes: a name is empty");
    auto t = EventTemplate::Parse(text, fmt::format("attribute {}", key));
    if (!t) return InvalidArgumentError("attributes: " + t.error().message());
    m.logs.attributes.emplace_back(key, std::move(*t));
  }
  SeriesMappingConfig c;
  c.names = MetricNames::kOpenTelemetry;
  c.metric = o.metric;
  c.label_fields = o.attribute_fields.value_or(metric_fields);
  c.labels = o.attributes;
  c.value = o.value;
  c.fields = o.fields;
  SEEDANCE_ASSIGN_OR_RETURN(m.metrics, MakeSeriesMapping(c));
  return m;
}

const Options<OtlpOptions>& OtlpSchema() {
  using S = OtlpOptions;
  static const Options<S> o = [] {
    Options<S> o;
    HttpBatchKeys(o,
                  "the OTLP/HTTP receiver, e.g. http://127.0.0.1:4318 (/v1/logs, /v1/metrics or "
                  "/v1/traces is added when it has no path)");
    o.Enum(&S::signal,
           {.name = "signal",
            .doc = "what the events become: logs (a record each), metrics (gauge points) or "
                   "traces (a span each, from span payloads as the otlp source writes them)",
            .default_value = "logs"},
           {{"logs", Signal::kLogs}, {"metrics", Signal::kMetrics}, {"traces", Signal::kTraces}})
        .Add(&S::resource,
             {.name = "resource",
              .doc = "resource attributes, e.g. service.name: gateway-7 (service.name is "
                     "\"seedance\" when not given)"})
        .Add(&S::body_field,
             {.name = "body_field",
              .doc = "logs: the payload field (dotted path) that is the record's body; the "
                     "whole payload when unset"})
        .Add(&S::severity_field,
             {.name = "severity_field",
              .doc = "logs: the payload field with the level (its text, and the severity number "
                     "of trace, debug, info, warn, error, fatal)"})
        .Add(&S::attribute_fields,
             {.name = "attribute_fields",
              .doc = "payload fields (dotted paths) copied as attributes: an object's members "
                     "each; default none for logs and traces, [labels, instance, job] for "
                     "metrics"})
        .Add(&S::attributes,
             {.name = "attributes",
              .doc = "attribute name: value with placeholders, e.g. site: \"{topic.2}\"; left "
                     "out when empty"})
        .Add(&S::metric, {.name = "metric",
                          .doc = "metrics: the metric name, text with placeholders; with "
                                 "`fields`, the prefix of each field's metric (<metric>.<field>)",
                          .default_value = "{payload.name}",
                          .validator = TemplateValidator("metric")})
        .Add(&S::value, {.name = "value",
                         .doc = "metrics: the payload field holding the point's value: a "
                                "number, a boolean (1/0), or \"NaN\", \"+Inf\", \"-Inf\"",
                         .default_value = "value"})
        .Add(&S::fields, {.name = "fields",
                          .doc = "metrics, instead of `value`: payload fields, each a gauge named "
                                 "<metric>.<field> (e.g. a window's [avg, max])"})
        .Check([](const S& s, const Params& p) -> Status {
          if (s.compression != util::BodyCompression::kNone &&
              s.compression != util::BodyCompression::kGzip) {
            return InvalidArgumentError(p.Location("compression") +
                                        ": OTLP/HTTP takes compression none or gzip");
          }
          if (auto m = MakeMappings(s); !m) {
            // The error starts with the key it is about (the metrics mapping's words for
            // them: labels, label_fields), or is about the metric template.
            const std::string& message = m.error().message();
            std::string key = "metric";
            for (auto [prefix, name] : {std::pair{"body_field:", "body_field"},
                                        {"severity_field:", "severity_field"},
                                        {"attribute_fields:", "attribute_fields"},
                                        {"attributes:", "attributes"},
                                        {"label_fields:", "attribute_fields"},
                                        {"labels:", "attributes"},
                                        {"value:", "value"},
                                        {"fields:", "fields"}}) {
              if (message.starts_with(prefix)) key = name;
            }
            return InvalidArgumentError(p.Location(key) + ": " + message);
          }
          return Status::Ok();
        });
    return o;
  }();
  return o;
}

}  // namespace

SinkFactory OtlpSinkFactory() {
  SinkFactory f;
  f.info.type = "otlp";
  f.info.kind = PluginKind::kSink;
  f.info.summary =
      "Sends events as OpenTelemetry logs, metrics or spans over OTLP/HTTP (protobuf).";
  f.delivery = {.batch_size = "1000",
                .batch_linger = "50ms",
                .concurrent = true,
                .timeout = true,
                .default_timeout = "10s"};
  f.info.params = OtlpSchema().Specs();
  f.create = [](const Params& p, PluginContext& ctx) -> Result<std::unique_ptr<Sink>> {
    SEEDANCE_ASSIGN_OR_RETURN(OtlpOptions o, OtlpSchema().Bind(p));
    SEEDANCE_ASSIGN_OR_RETURN(Mappings m, MakeMappings(o));
    o.url_text = SignalUrl(o.url_text, o.signal);
    observe::Counter* rejected = &ctx.metrics->GetCounter(
        "seedance_otlp_rejected_records_total",
        "Records an OTLP receiver's partial_success rejected without naming them.",
        {{"component", ctx.name}});
    auto codec = std::make_unique<OtlpCodec>(o.signal, std::move(m.logs), std::move(m.metrics),
                                             std::move(m.resource), rejected, ctx.name);
    return MakeHttpBatchSink(static_cast<HttpBatchOptions&&>(std::move(o)), std::move(codec), ctx);
  };
  return f;
}

}  // namespace seedance::sinks
