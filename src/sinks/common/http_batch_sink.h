// A sink that sends each attempt as one HTTP request (`http`, `influxdb`): the endpoint keys
// every such sink takes, request-body compression, and the turn of an answer into an attempt's
// outcome. The protocol (keep-alive connections, TLS, the bounded response read, an abort at
// the runner's timeout) is http/client.h's; what goes in a request and what an answer means are
// the sink's (HttpBatchCodec); retries, backoff and concurrency are the runner's.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "http/client.h"
#include "http/url.h"
#include "seedance/options.h"
#include "seedance/plugin_context.h"
#include "seedance/sink.h"
#include "util/body_compressor.h"
#include "util/tls_files.h"

namespace seedance::sinks {

enum class HttpMethod { kPost, kPut };

// The keys every HTTP-based sink takes (HttpBatchKeys below); a sink's options struct
// derives from this one.
struct HttpBatchOptions {
  http::Url url;  // of url_text
  std::string url_text;
  HttpMethod method = HttpMethod::kPost;
  StringPairs headers;
  util::BodyCompression compression = util::BodyCompression::kNone;
  int compression_level = 0;  // 0: the method's default
  struct Tls {
    std::string ca_file;
    bool verify = true;
  } tls;
};

// Receives the header fields a codec adds to one request.
class HeaderFieldWriter {
 public:
  virtual void Add(std::string_view name, std::string_view value) = 0;

 protected:
  ~HeaderFieldWriter() = default;
};

// A sink's half of the exchange. Called on the event loop.
class HttpBatchCodec {
 public:
  virtual ~HttpBatchCodec() = default;
  // Appends the request body for `batch` to `body` (empty; its storage is reused) and returns
  // the Content-Type. An event that cannot be written is left out and added to `unwritable`
  // with the reason: it goes to `rejected` when the rest is delivered (at once, with no
  // request, when nothing is left).
  virtual std::string_view Encode(const Batch& batch, std::string& body,
                                  std::vector<RejectedEvent>& unwritable) const = 0;
  // Header fields of this request besides the configured `headers`.
  virtual void AddHeaderFields(const Batch& /*batch*/, HeaderFieldWriter& /*out*/) const {}
  // What the final response means for `batch`. The default: 2xx delivered; 408, 429, 5xx
  // retried (Retry-After honoured; 429/503 lower the concurrency); 413 too large; the rest
  // rejected (sinks/common/response_policy.h).
  virtual AttemptOutcome Outcome(const Batch& batch, const http::Answer& answer) const;
};

// A header name is an RFC 9110 token; a value has no control characters but HTAB (a line
// break would end the field and start another: header injection, also through ${VAR}).
Status CheckHeaderFields(const ParamValue& v);

// The sink: builds each attempt's request with `codec` and sends it. Makes the client here
// (loads the TLS files: `validate` reports a bad CA file). `max_batch`: Sink::MaxBatchEvents.
Result<std::unique_ptr<Sink>> MakeHttpBatchSink(HttpBatchOptions o,
                                                std::unique_ptr<HttpBatchCodec> codec,
                                                PluginContext ctx, size_t max_batch = SIZE_MAX);

// Adds the keys of HttpBatchOptions to a sink's schema: endpoint, method, headers,
// compression, compression_level, tls. S derives from HttpBatchOptions. `endpoint_doc`
// describes the endpoint for this sink; `compression` is the default compression's word.
template <typename S>
Options<S>& HttpBatchKeys(Options<S>& o, std::string endpoint_doc,
                          std::string compression = "none");

// The one part of the schema not tied to a type: endpoint URL, method and compression words.
namespace http_batch_internal {
Status CheckEndpoint(const ParamValue& v);
Status CheckLevel(const HttpBatchOptions& s, const Params& p);
std::vector<std::pair<std::string, HttpMethod>> MethodChoices();
}  // namespace http_batch_internal

template <typename S>
Options<S>& HttpBatchKeys(Options<S>& o, std::string endpoint_doc, std::string compression) {
  using C = HttpBatchOptions;
  using Tls = C::Tls;
  o.Add(static_cast<std::string S::*>(&C::url_text),
        {.name = "endpoint",
         .doc = std::move(endpoint_doc),
         .required = true,
         .validator = http_batch_internal::CheckEndpoint})
      .Enum(static_cast<HttpMethod S::*>(&C::method),
            {.name = "method", .doc = "HTTP method", .default_value = "POST"},
            http_batch_internal::MethodChoices())
      .Add(static_cast<StringPairs S::*>(&C::headers),
           {.name = "headers",
            .doc = "extra request headers, e.g. Authorization: \"Bearer ${TOKEN}\"",
            .validator = CheckHeaderFields})
      .Enum(static_cast<util::BodyCompression S::*>(&C::compression),
            {.name = "compression",
             .doc = "request body compression: none, gzip, zstd or snappy (Content-Encoding "
                    "is set)",
             .default_value = std::move(compression)},
            util::BodyCompressionChoices())
      .Int(static_cast<int S::*>(&C::compression_level),
           {.name = "compression_level",
            .doc = "gzip 1-9 (default 6), zstd 1-19 (default 3); 0 for the default",
            .default_value = "0"})
      .Section(static_cast<Tls S::*>(&C::tls),
               {.name = "tls", .doc = "TLS settings for https endpoints"},
               Options<Tls>()
                   .Add(&Tls::ca_file, {.name = "ca_file",
                                        .doc = "PEM CAs; system CAs when unset",
                                        .validator = util::CheckReadableFile})
                   .Add(&Tls::verify, {.name = "verify",
                                       .doc = "verify the server certificate",
                                       .default_value = "true"}))
      .Check([](const S& s, const Params& p) { return http_batch_internal::CheckLevel(s, p); });
  return o;
}

}  // namespace seedance::sinks
