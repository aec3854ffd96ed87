#include "sources/http/http_source.h"

#include <algorithm>

#include "seedance/options.h"
#include "sources/http/http_source_options.h"
#include "sources/http/push_source.h"
#include "sources/http/request_body.h"
#include "util/strings.h"

namespace seedance::sources {
namespace {

namespace bhttp = boost::beast::http;

// JSON bodies (request_body.h); answers {"accepted": N} and {"error": "..."}.
class JsonPushProtocol final : public PushProtocol {
 public:
  JsonPushProtocol(StringPairs paths, BodyFormat format)
      : paths_(std::move(paths)), format_(format) {}

  std::optional<std::string> Topic(std::string_view path) const override {
    if (paths_.empty()) return std::string(path.substr(path.empty() || path[0] != '/' ? 0 : 1));
    auto it =
        std::find_if(paths_.begin(), paths_.end(), [&](const auto& p) { return p.first == path; });
    if (it == paths_.end()) return std::nullopt;
    return it->second;
  }

  Result<PushBatch> Decode(const http::Request& req, std::string_view /*topic*/,
                           std::string_view body, size_t max_events,
                           int64_t now_ns) const override {
    const auto type = req[bhttp::field::content_type];
    SEEDANCE_ASSIGN_OR_RETURN(
        std::vector<std::string> payloads,
        SplitBody(body, format_, std::string_view(type.data(), type.size()), max_events));
    // W3C trace context: every event of the request carries the request's (bounded: the
    // spec's tracestate is at most 512 characters; a longer value is not trace context).
    const auto traceparent = req["traceparent"];
    const auto tracestate = req["tracestate"];
    const bool traced = !traceparent.empty() && traceparent.size() <= 512;
    PushBatch batch;
    batch.events.reserve(payloads.size());
    for (std::string& payload : payloads) {
      Event& e = batch.events.emplace_back();
      e.payload = std::move(payload);
      e.format = PayloadFormat::kJson;
      e.event_time_ns = now_ns;
      if (traced) {
        e.SetHeader("traceparent", std::string_view(traceparent.data(), traceparent.size()));
        if (!tracestate.empty() && tracestate.size() <= 512) {
          e.SetHeader("tracestate", std::string_view(tracestate.data(), tracestate.size()));
        }
      }
    }
    return batch;
  }

  PushReply Accepted(const http::Request& /*req*/, const PushBatch& /*batch*/, size_t accepted,
                     bool repeat) const override {
    return {"application/json",
            "{\"accepted\":" + std::to_string(accepted) + (repeat ? ",\"repeat\":true}\n" : "}\n")};
  }

  PushReply Refused(const http::Request* /*req*/, bhttp::status /*status*/,
                    std::string_view message) const override {
    std::string body = "{\"error\":";
    util::AppendJsonString(body, message);
    body += "}\n";
    return {"application/json", std::move(body)};
  }

 private:
  StringPairs paths_;
  BodyFormat format_;
};

}  // namespace

SourceFactory HttpSourceFactory() {
  SourceFactory f;
  f.info.type = "http";
  f.info.kind = PluginKind::kSource;
  f.info.summary =
      "Takes JSON pushed with HTTP POST (an object, an array or NDJSON); answers 200 once every "
      "event is stored.";
  f.info.params = HttpSourceSchema().Specs();
  f.create = [](const Params& p, PluginContext& ctx) -> Result<std::unique_ptr<Source>> {
    SEEDANCE_ASSIGN_OR_RETURN(HttpSourceOptions o, HttpSourceSchema().Bind(p));
    auto protocol = std::make_unique<JsonPushProtocol>(o.paths, o.format);
    return MakePushSource(std::move(o), std::move(protocol), ctx);
  };
  return f;
}

}  // namespace seedance::sources
