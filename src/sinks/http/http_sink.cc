#include "sinks/http/http_sink.h"

#include <algorithm>

#include "seedance/options.h"
#include "sinks/common/event_encoding.h"
#include "sinks/common/header_selection.h"
#include "sinks/common/http_batch_sink.h"

namespace seedance::sinks {
namespace {

struct HttpSinkOptions : HttpBatchOptions {
  std::vector<std::string> event_headers;  // names, or prefixes ending in '*' (format: single)
  EventEncoding encoding = EventEncoding::kPayload;
  BatchFormat format = BatchFormat::kJsonArray;
};

// Events as a JSON array, NDJSON or one per request; the answer read the default way.
class EventBatchCodec final : public HttpBatchCodec {
 public:
  explicit EventBatchCodec(const HttpSinkOptions& o)
      : event_headers_(o.event_headers, /*text_fields=*/true),
        encoding_(o.encoding),
        format_(o.format) {}

  std::string_view Encode(const Batch& batch, std::string& body,
                          std::vector<RejectedEvent>& /*unwritable*/) const override {
    AppendBatch(batch.events, encoding_, format_, body);
    return ContentType(format_, encoding_, batch.events.empty() ? nullptr : &batch.events[0]);
  }

  // The first event's headers that `event_headers` names (format: single: the only event).
  void AddHeaderFields(const Batch& batch, HeaderFieldWriter& out) const override {
    if (event_headers_.empty() || batch.events.empty()) return;
    event_headers_.ForEach(batch.events[0], [&out](const Header& h) { out.Add(h.name, h.value); });
  }

 private:
  HeaderSelection event_headers_;
  EventEncoding encoding_;
  BatchFormat format_;
};

const Options<HttpSinkOptions>& HttpSinkSchema() {
  using S = HttpSinkOptions;
  static const Options<S> o = [] {
    Options<S> o;
    HttpBatchKeys(o, "URL to send events to, e.g. http://127.0.0.1:8080/v1/metrics");
    o.Add(&S::event_headers,
          {.name = "event_headers",
           .doc = "event headers sent as request header fields, by name or prefix (mqtt_*); "
                  "needs format: single"})
        .Enum(&S::format,
              {.name = "format",
               .doc = "body: json_array (a batch as a JSON array), ndjson, or single (one event "
                      "per request)",
               .default_value = "json_array"},
              BatchFormatChoices())
        .Enum(&S::encoding,
              {.name = "encoding",
               .doc = "each event as its payload, or as an envelope with id, topic, time and "
                      "payload",
               .default_value = "payload"},
              EventEncodingChoices())
        .Check([](const S& s, const Params& p) {
          if (!s.event_headers.empty() && s.format != BatchFormat::kSingle) {
            return InvalidArgumentError(
                p.Location("event_headers") +
                ": event_headers needs format: single (one event per request: a batch has no "
                "one set of headers)");
          }
          return Status::Ok();
        });
    return o;
  }();
  return o;
}

}  // namespace

SinkFactory HttpSinkFactory() {
  SinkFactory f;
  f.info.type = "http";
  f.info.kind = PluginKind::kSink;
  f.info.summary = "Sends batches of events to an HTTP(S) endpoint, with retries.";
  // 2 ms: the MQTT source reads at most every 2 ms and dates what it reads from the start of
  // its wait, so each read's events leave as one request as soon as they are processed, with
  // no timer of the sink's own (bench/run linger, docs/http-sink.md). Other sources' events
  // still gather: at 5k msg/s read one by one, about 10 per request.
  f.delivery = {.batch_linger = "2ms", .concurrent = true, .timeout = true};
  f.info.params = HttpSinkSchema().Specs();
  f.create = [](const Params& p, PluginContext& ctx) -> Result<std::unique_ptr<Sink>> {
    SEEDANCE_ASSIGN_OR_RETURN(HttpSinkOptions o, HttpSinkSchema().Bind(p));
    const size_t max_batch = o.format == BatchFormat::kSingle ? 1 : SIZE_MAX;
    auto codec = std::make_unique<EventBatchCodec>(o);
    // Here, not at Start: `validate` builds the sink too, so it reports a bad CA file.
    return MakeHttpBatchSink(static_cast<HttpBatchOptions&&>(std::move(o)), std::move(codec), ctx,
                             max_batch);
  };
  return f;
}

}  // namespace seedance::sinks
