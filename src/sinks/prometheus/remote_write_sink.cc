#include "sinks/prometheus/remote_write_sink.h"

#include <fmt/format.h>

#include "seedance/options.h"
#include "sinks/common/http_batch_sink.h"
#include "sinks/common/series_mapping.h"
#include "sinks/prometheus/remote_write_request.h"
#include "util/strings.h"

namespace seedance::sinks {
namespace {

struct RemoteWriteOptions : HttpBatchOptions {
  SeriesMappingConfig mapping;
};

class RemoteWriteCodec final : public HttpBatchCodec {
 public:
  explicit RemoteWriteCodec(SeriesMapping mapping) : mapping_(std::move(mapping)) {}

  std::string_view Encode(const Batch& batch, std::string& body,
                          std::vector<RejectedEvent>& unwritable) const override {
    samples_.clear();
    std::string why;
    for (size_t i = 0; i < batch.events.size(); ++i) {
      if (!AppendSamples(mapping_, batch.events[i], samples_, &why)) {
        unwritable.push_back({i, "prometheus_remote_write: " + why});
      }
    }
    AppendWriteRequest(samples_, body);
    if (samples_.capacity() > kKeptSamples) samples_ = {};
    return "application/x-protobuf";
  }

  void AddHeaderFields(const Batch& /*batch*/, HeaderFieldWriter& out) const override {
    out.Add("X-Prometheus-Remote-Write-Version", "0.1.0");
  }

  // 400: Prometheus took none of the request (it rolls back on the first sample it refuses).
  AttemptOutcome Outcome(const Batch& batch, const http::Answer& a) const override {
    if (a.status != 400) return HttpBatchCodec::Outcome(batch, a);
    std::string message = util::SanitizeText(a.body, 300);
    while (!message.empty() && (message.back() == '\n' || message.back() == ' ')) {
      message.pop_back();
    }
    if (batch.events.size() > 1) {
      return AttemptOutcome::Bisect(
          fmt::format("prometheus refused a sample of the batch ({})", message));
    }
    return AttemptOutcome::Rejected("prometheus_remote_write: HTTP 400: " + message);
  }

 private:
  static constexpr size_t kKeptSamples = 8192;
  SeriesMapping mapping_;
  mutable std::vector<SeriesSample> samples_;  // storage reused (the event loop's alone)
};

const Options<RemoteWriteOptions>& RemoteWriteSchema() {
  using S = RemoteWriteOptions;
  using M = SeriesMappingConfig;
  static const Options<S> o = [] {
    Options<S> o;
    HttpBatchKeys(o, "the remote-write URL, e.g. http://127.0.0.1:9090/api/v1/write", "snappy");
    o.Include(
        &S::mapping,
        Options<M>()
            .Add(&M::metric,
                 {.name = "metric",
                  .doc = "the series name: text with placeholders ({topic}, {topic.N}, "
                         "{payload.FIELD}, {header.NAME}); with `fields`, the prefix of "
                         "each field's series name",
                  .default_value = "{payload.name}",
                  .validator = TemplateValidator("metric")})
            .Add(&M::label_fields,
                 {.name = "label_fields",
                  .doc = "payload fields (dotted paths) read as labels: an object's members "
                         "each, a string, number or boolean as the label named as the field",
                  .default_value = "[labels, instance, job]"})
            .Add(&M::labels,
                 {.name = "labels",
                  .doc = "label name: value with placeholders, e.g. site: \"{topic.2}\"; "
                         "wins over a payload label of the same name; left out when empty"})
            .Add(&M::value, {.name = "value",
                             .doc = "the payload field (dotted path) holding the sample's value: a "
                                    "number, a boolean (1/0), or \"NaN\", \"+Inf\", \"-Inf\"",
                             .default_value = "value"})
            .Add(&M::fields,
                 {.name = "fields",
                  .doc = "instead of `value`: payload fields (dotted paths), each a series "
                         "named <metric>_<field> (e.g. a window's [avg, max])"}));
    o.Check([](const S& s, const Params& p) -> Status {
      if (s.compression != util::BodyCompression::kSnappy) {
        return InvalidArgumentError(p.Location("compression") +
                                    ": remote write sends snappy (compression: snappy)");
      }
      auto mapping = MakeSeriesMapping(s.mapping);
      if (!mapping) {
        // The error starts with the key it is about, or names the metric template.
        const std::string& message = mapping.error().message();
        std::string key = "metric";
        for (const char* k : {"label_fields", "labels", "value", "fields"}) {
          if (message.starts_with(std::string(k) + ":")) key = k;
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

SinkFactory PrometheusRemoteWriteSinkFactory() {
  SinkFactory f;
  f.info.type = "prometheus_remote_write";
  f.info.kind = PluginKind::kSink;
  f.info.summary = "Sends events as samples to a Prometheus remote-write receiver.";
  f.delivery = {.batch_size = "2000",
                .batch_linger = "50ms",
                .concurrent = true,
                .concurrency = "1",
                .timeout = true,
                .default_timeout = "30s"};
  f.info.params = RemoteWriteSchema().Specs();
  f.create = [](const Params& p, PluginContext& ctx) -> Result<std::unique_ptr<Sink>> {
    SEEDANCE_ASSIGN_OR_RETURN(RemoteWriteOptions o, RemoteWriteSchema().Bind(p));
    SEEDANCE_ASSIGN_OR_RETURN(SeriesMapping mapping, MakeSeriesMapping(o.mapping));
    return MakeHttpBatchSink(static_cast<HttpBatchOptions&&>(std::move(o)),
                             std::make_unique<RemoteWriteCodec>(std::move(mapping)), ctx);
  };
  return f;
}

}  // namespace seedance::sinks
