#include "sources/otlp/otlp_source.h"

#include <fmt/format.h>

#include "seedance/options.h"
#include "sources/http/http_source_options.h"
#include "sources/http/push_source.h"
#include "sources/otlp/otlp_json.h"
#include "sources/otlp/otlp_records.h"
#include "util/protobuf_writer.h"
#include "util/strings.h"

namespace seedance::sources {
namespace {

namespace bhttp = boost::beast::http;

struct OtlpSourceOptions {
  HttpSourceOptions server;
  std::string topic_prefix;
};

const Options<OtlpSourceOptions>& OtlpSourceSchema() {
  static const Options<OtlpSourceOptions> o = [] {
    Options<HttpSourceOptions> server;
    AddPushServerOptions(
        server, {.listen = "127.0.0.1:4318",
                 .max_events_name = "max_records",
                 .max_events_doc = "most log records, data points or spans in one request (at "
                                   "most pipeline.queue_capacity); more get 413"});
    Options<OtlpSourceOptions> o;
    o.Include(&OtlpSourceOptions::server, server)
        .Add(&OtlpSourceOptions::topic_prefix,
             {.name = "topic_prefix",
              .doc = "the events' topic is this followed by logs, metrics or traces",
              .default_value = "otlp/"});
    return o;
  }();
  return o;
}

std::string_view Path(const http::Request& req) {
  std::string_view path(req.target().data(), req.target().size());
  return path.substr(0, path.find('?'));
}

std::optional<OtlpSignal> SignalOf(std::string_view path) {
  if (path == "/v1/logs") return OtlpSignal::kLogs;
  if (path == "/v1/metrics") return OtlpSignal::kMetrics;
  if (path == "/v1/traces") return OtlpSignal::kTraces;
  return std::nullopt;
}

enum class Encoding { kProtobuf, kJson, kOther };

Encoding EncodingOf(const http::Request& req) {
  const auto field = req[bhttp::field::content_type];
  std::string type(field.data(), field.size());
  type = type.substr(0, type.find(';'));
  std::erase(type, ' ');
  std::transform(type.begin(), type.end(), type.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  if (type == "application/x-protobuf" || type == "application/protobuf") {
    return Encoding::kProtobuf;
  }
  if (type == "application/json") return Encoding::kJson;
  return Encoding::kOther;
}

// google.rpc.Code for an HTTP status (the OTLP spec's error body is a google.rpc.Status).
int RpcCode(bhttp::status status) {
  switch (status) {
    case bhttp::status::unauthorized:
      return 16;  // UNAUTHENTICATED
    case bhttp::status::not_found:
      return 5;  // NOT_FOUND
    case bhttp::status::method_not_allowed:
      return 12;  // UNIMPLEMENTED
    case bhttp::status::payload_too_large:
      return 8;  // RESOURCE_EXHAUSTED
    case bhttp::status::service_unavailable:
      return 14;  // UNAVAILABLE
    default:
      return 3;  // INVALID_ARGUMENT
  }
}

class OtlpPushProtocol final : public PushProtocol {
 public:
  // `max_event_bytes`: the most a request's events may hold (its records repeat their
  // resource and scope).
  OtlpPushProtocol(std::string topic_prefix, uint64_t max_event_bytes)
      : prefix_(std::move(topic_prefix)), max_event_bytes_(max_event_bytes) {}

  std::optional<std::string> Topic(std::string_view path) const override {
    const auto signal = SignalOf(path);
    if (!signal) return std::nullopt;
    return prefix_ + std::string(path.substr(4));  // "/v1/logs" → prefix + "logs"
  }

  Result<PushBatch> Decode(const http::Request& req, std::string_view /*topic*/,
                           std::string_view body, size_t max_events,
                           int64_t now_ns) const override {
    const OtlpSignal signal = *SignalOf(Path(req));
    switch (EncodingOf(req)) {
      case Encoding::kProtobuf:
        return DecodeOtlpRequest(signal, body, max_events, max_event_bytes_, now_ns);
      case Encoding::kJson: {
        SEEDANCE_ASSIGN_OR_RETURN(std::string protobuf, OtlpJsonToProtobuf(signal, body));
        return DecodeOtlpRequest(signal, protobuf, max_events, max_event_bytes_, now_ns);
      }
      case Encoding::kOther:
        break;
    }
    const auto type = req[bhttp::field::content_type];
    return FailedPreconditionError(
        "Content-Type " + util::SanitizeText(std::string_view(type.data(), type.size()), 64) +
        " is not supported (application/x-protobuf or application/json)");
  }

  // Export{Logs,Metrics,Trace}ServiceResponse: partial_success (1) with the count (1) and a
  // message (2) when records were refused; empty when every one was taken.
  PushReply Accepted(const http::Request& req, const PushBatch& batch, size_t /*accepted*/,
                     bool /*repeat*/) const override {
    const bool json = EncodingOf(req) == Encoding::kJson;
    PushReply reply{json ? "application/json" : "application/x-protobuf", ""};
    if (batch.refused.empty()) {
      if (json) reply.body = "{}";
      return reply;
    }
    std::string message = batch.refused.front().reason;
    if (batch.refused.size() > 1) {
      message += fmt::format(" (and {} more refused)", batch.refused.size() - 1);
    }
    const auto rejected = static_cast<int64_t>(batch.refused.size());
    if (json) {
      const auto signal = SignalOf(Path(req));
      const char* field = signal == OtlpSignal::kLogs      ? "rejectedLogRecords"
                          : signal == OtlpSignal::kMetrics ? "rejectedDataPoints"
                                                           : "rejectedSpans";
      reply.body =
          fmt::format("{{\"partialSuccess\":{{\"{}\":\"{}\",\"errorMessage\":", field, rejected);
      util::AppendJsonString(reply.body, message);
      reply.body += "}}";
      return reply;
    }
    util::ProtobufWriter w(reply.body);
    const size_t begin = w.BeginMessage(1);
    w.Int64(1, rejected);
    w.Bytes(2, message);
    w.EndMessage(begin);
    return reply;
  }

  // google.rpc.Status: code (1), message (2).
  PushReply Refused(const http::Request* req, bhttp::status status,
                    std::string_view message) const override {
    const int code = RpcCode(status);
    if (req != nullptr && EncodingOf(*req) == Encoding::kJson) {
      std::string body = fmt::format("{{\"code\":{},\"message\":", code);
      util::AppendJsonString(body, message);
      body += "}";
      return {"application/json", std::move(body)};
    }
    PushReply reply{"application/x-protobuf", ""};
    util::ProtobufWriter w(reply.body);
    w.Varint(1, static_cast<uint64_t>(code));
    w.Bytes(2, message);
    return reply;
  }

 private:
  std::string prefix_;
  uint64_t max_event_bytes_;
};

}  // namespace

SourceFactory OtlpSourceFactory() {
  SourceFactory f;
  f.info.type = "otlp";
  f.info.kind = PluginKind::kSource;
  f.info.summary =
      "Takes OpenTelemetry logs, metrics and spans over OTLP/HTTP (protobuf or JSON); answers "
      "200 once every record is stored.";
  f.info.params = OtlpSourceSchema().Specs();
  f.create = [](const Params& p, PluginContext& ctx) -> Result<std::unique_ptr<Source>> {
    SEEDANCE_ASSIGN_OR_RETURN(OtlpSourceOptions o, OtlpSourceSchema().Bind(p));
    // Four times the body: a full body of records as JSON (about twice its protobuf) with room
    // for resources and scopes of a few KiB each.
    auto protocol = std::make_unique<OtlpPushProtocol>(o.topic_prefix, 4 * o.server.max_body);
    return MakePushSource(std::move(o.server), std::move(protocol), ctx);
  };
  return f;
}

}  // namespace seedance::sources
