#include "sources/http/push_source.h"

#include <fmt/format.h>

#include <boost/asio/redirect_error.hpp>
#include <boost/asio/ssl/context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/http.hpp>

#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <set>

#include "http/server.h"
#include "observe/component_stats.h"
#include "observe/connection_shedding.h"
#include "observe/metrics.h"
#include "seedance/options.h"
#include "seedance/plugin_context.h"
#include "util/crc32c.h"
#include "util/event_loop.h"
#include "util/gzip.h"
#include "util/listen_address.h"
#include "util/log.h"
#include "util/strings.h"
#include "util/tls_files.h"
#include "util/zstd_body.h"

namespace seedance::sources {
namespace {

namespace asio = boost::asio;
namespace bhttp = boost::beast::http;
using asio::awaitable;
using asio::use_awaitable;
using boost::system::error_code;
using Clock = std::chrono::steady_clock;

constexpr size_t kMaxHeaderBytes = 16 * 1024;

// Longest idempotency key taken (the IETF draft's keys are UUIDs and such).
constexpr size_t kMaxIdempotencyKey = 255;

// A request whose events are in the pipeline, waiting to be acknowledged.
struct Pending {
  explicit Pending(asio::io_context& io) : done(io, Clock::time_point::max()) {}
  size_t remaining = 0;
  asio::steady_timer done;  // cancelled when the last event is acknowledged
};

class PushSource final : public Source, public Acknowledger {
 public:
  PushSource(HttpSourceOptions options, std::unique_ptr<PushProtocol> protocol, PluginContext ctx)
      : options_(std::move(options)), protocol_(std::move(protocol)), ctx_(std::move(ctx)) {}

  // Loads the certificate, key and client CAs: at create, so `validate` reports a bad file.
  Status InitTls() {
    if (options_.tls.cert_file.empty()) return Status::Ok();
    SEEDANCE_ASSIGN_OR_RETURN(tls_,
                              http::MakeServerTls(options_.tls.cert_file, options_.tls.key_file,
                                                  options_.tls.client_ca_file));
    return Status::Ok();
  }

  Status Start(SourceOutput& output) override {
    output_ = &output;
    if (ctx_.positions != nullptr && ctx_.positions->active() &&
        !options_.idempotency_header.empty()) {
      checkpoint_ = ctx_.positions;
    }
    const auto per_client = std::min(options_.max_connections, options_.max_connections_per_client);
    auto shedding = std::make_shared<observe::ConnectionShedding>(
        *ctx_.metrics, ctx_.name,
        fmt::format("max_connections_per_client ({}) connections", per_client));
    server_ = std::make_unique<http::Server>(
        ctx_.loop->io(), ctx_.name,
        http::ServerLimits{.max_connections = static_cast<size_t>(options_.max_connections),
                           .max_connections_per_client = static_cast<size_t>(per_client),
                           .max_header_bytes = kMaxHeaderBytes,
                           .max_body_bytes = options_.max_body,
                           .idle_timeout = options_.idle_timeout},
        http::ServerHooks{.handle = [this](const http::Request& req) { return Serve(req); },
                          .too_large = [this](http::TooLarge what) { return RefuseTooLarge(what); },
                          // Owned by the server's connections, which may end after this source.
                          .shed = [shedding](const std::string& client,
                                             bool refused) { shedding->Shed(client, refused); },
                          .tls_refused = [this] { Count(0); }},
        tls_);
    Result<uint16_t> port = server_->Listen(options_.listen);
    if (!port) {
      if (port.error().code() == StatusCode::kInvalidArgument) {
        return InvalidArgumentError("listen: " + port.error().message());
      }
      return FailedPreconditionError(port.error().message());
    }
    SEEDANCE_LOG_INFO(ctx_.name, "listening on {}", options_.listen);
    return Status::Ok();
  }

  void Stop() override {
    if (server_) server_->Stop();
  }

  // Any thread (the pipeline's).
  void Acknowledge(uint64_t token) override {
    std::shared_ptr<Pending> finished;
    {
      std::lock_guard<std::mutex> lock(mu_);
      auto it = pending_.upper_bound(token);
      if (it == pending_.begin()) return;
      --it;
      if (--it->second->remaining != 0) return;
      finished = std::move(it->second);
      pending_.erase(it);
    }
    ctx_.loop->Post([finished] { finished->done.cancel(); });
  }

 private:
  struct Answer {
    bhttp::status status;
    std::string body;  // for 200 the answer's body, else the reason
    int retry_after_s = 0;
    std::string content_type;  // for 200
  };

  static Answer Ok(PushReply reply) {
    return Answer{bhttp::status::ok, std::move(reply.body), 0, std::move(reply.content_type)};
  }

  // One request: its answer, counted and timed.
  awaitable<http::Response> Serve(const http::Request& req) {
    bytes_->Add(req.body().size());
    const auto started = Clock::now();
    Answer answer = co_await Handle(req);
    latency_->Observe(std::chrono::duration<double>(Clock::now() - started).count());
    http::Response res = Respond(answer, req.version(), &req);
    // A body that inflated past max_body: the client is told and the connection ends.
    if (answer.status == bhttp::status::payload_too_large) res.keep_alive(false);
    co_return res;
  }

  http::Response RefuseTooLarge(http::TooLarge what) {
    return Respond(
        {bhttp::status::payload_too_large,
         what == http::TooLarge::kBody
             ? "body larger than max_body (" + std::to_string(options_.max_body) + " bytes)"
             : "header larger than 16 KiB"},
        11, nullptr);
  }

  http::Response Respond(const Answer& answer, unsigned version, const http::Request* req) {
    Count(static_cast<int>(answer.status));
    http::Response res{answer.status, version};
    if (answer.retry_after_s > 0)
      res.set(bhttp::field::retry_after, std::to_string(answer.retry_after_s));
    if (answer.status == bhttp::status::unauthorized) {
      res.set(bhttp::field::www_authenticate,
              options_.bearer_token.empty() ? "Basic realm=\"seedance\"" : "Bearer");
    }
    if (answer.status == bhttp::status::ok) {
      res.set(bhttp::field::content_type, answer.content_type);
      res.body() = answer.body;
    } else {
      PushReply reply = protocol_->Refused(req, answer.status, answer.body);
      res.set(bhttp::field::content_type, reply.content_type);
      res.body() = std::move(reply.body);
    }
    return res;
  }

  bool Authorized(const http::Request& req) const {
    if (options_.bearer_token.empty() && options_.basic_auth.user.empty()) return true;
    const auto auth = req[bhttp::field::authorization];
    const std::string_view given(auth.data(), auth.size());
    if (!options_.bearer_token.empty()) {
      return given.substr(0, 7) == "Bearer " &&
             util::SameSecret(given.substr(7), options_.bearer_token);
    }
    if (given.substr(0, 6) != "Basic ") return false;
    std::string expected;
    util::AppendBase64(expected, options_.basic_auth.user + ":" + options_.basic_auth.password);
    return util::SameSecret(given.substr(6), expected);
  }

  awaitable<Answer> Handle(const http::Request& req) {
    if (req.method() != bhttp::verb::post) {
      co_return Answer{bhttp::status::method_not_allowed, "POST only"};
    }
    if (!Authorized(req)) {
      co_return Answer{bhttp::status::unauthorized, options_.bearer_token.empty()
                                                        ? "missing or wrong user or password"
                                                        : "missing or wrong bearer token"};
    }
    std::string_view path(req.target().data(), req.target().size());
    path = path.substr(0, path.find('?'));
    const std::optional<std::string> topic_or = protocol_->Topic(path);
    if (!topic_or) co_return Answer{bhttp::status::not_found, "unknown path"};
    const std::string& topic = *topic_or;
    const std::string* body = &req.body();
    std::string inflated;
    const auto encoding = req[bhttp::field::content_encoding];
    const std::string_view coding(encoding.data(), encoding.size());
    if (coding == "gzip" || coding == "x-gzip" || coding == "zstd") {
      // Bounded like a plain body: a small bomb does not inflate past max_body.
      const bool gzip = coding != "zstd";
      Result<std::string> plain = gzip ? util::Gunzip(req.body(), options_.max_body)
                                       : util::Unzstd(req.body(), options_.max_body);
      if (!plain) {
        const bool large = plain.error().code() == StatusCode::kResourceExhausted;
        co_return Answer{large ? bhttp::status::payload_too_large : bhttp::status::bad_request,
                         std::string(gzip ? "gzip" : "zstd") + " body: " + plain.error().message()};
      }
      inflated = std::move(plain).value();
      body = &inflated;
    } else if (!coding.empty() && coding != "identity") {
      co_return Answer{bhttp::status::unsupported_media_type,
                       "Content-Encoding " + util::SanitizeText(coding, 32) +
                           " is not supported (gzip, zstd or identity)"};
    }
    auto decoded = protocol_->Decode(req, topic, *body, static_cast<size_t>(options_.max_events),
                                     ctx_.now_ns());
    if (!decoded) {
      switch (decoded.error().code()) {
        case StatusCode::kResourceExhausted:
          co_return Answer{bhttp::status::payload_too_large, decoded.error().message()};
        case StatusCode::kFailedPrecondition:
          co_return Answer{bhttp::status::unsupported_media_type, decoded.error().message()};
        default:
          // The body goes to `error` with the reason: a refused request is seen, not lost.
          co_await EmitInvalid(*body, topic, decoded.error().message());
          co_return Answer{bhttp::status::bad_request, decoded.error().message()};
      }
    }
    PushBatch& batch = *decoded;
    // Records refused one by one: each to `error` with its reason; the rest is taken.
    for (const PushBatch::Refused& r : batch.refused)
      co_await EmitInvalid(r.record, topic, r.reason);
    std::vector<Event>& events = batch.events;
    // An idempotency key (pipelines with stateful processors): a request sent again after an
    // answer was lost is not counted twice. The checkpoint holds, with the state, how many of
    // the key's events are committed and a fingerprint of the body.
    std::string idem;
    uint32_t stream = 0;
    size_t skip = 0;
    const uint32_t body_crc = util::Crc32c(*body);
    const auto body_bytes = static_cast<uint32_t>(std::min<size_t>(body->size(), UINT32_MAX));
    if (checkpoint_ != nullptr) {
      const auto header = req[options_.idempotency_header];
      if (!header.empty()) {
        if (header.size() > kMaxIdempotencyKey) {
          co_return Answer{bhttp::status::bad_request,
                           options_.idempotency_header + " is longer than " +
                               std::to_string(kMaxIdempotencyKey) + " bytes"};
        }
        idem = "key:" + std::string(header.data(), header.size());
        if (idem_in_flight_.count(idem) != 0) {
          co_return Answer{
              bhttp::status::conflict,
              "a request with this " + options_.idempotency_header + " is still being processed"};
        }
        PositionCheckpoint::Committed c;
        if (checkpoint_->Find(ctx_.name, idem, &c)) {
          if (c.head_crc != body_crc || c.head_bytes != body_bytes) {
            co_return Answer{
                bhttp::status::unprocessable_entity,
                options_.idempotency_header + " was used before for a different request body"};
          }
          skip = static_cast<size_t>(std::min<uint64_t>(c.offset, events.size()));
        }
        if (skip == events.size()) {
          repeats_->Add();
          uint64_t suppressed = 0;
          if (limiter_.Allow("repeat", &suppressed)) {
            SEEDANCE_LOG_INFO(ctx_.name,
                              "a request sent again with the same {} was already stored; "
                              "answered 200, not processed again",
                              options_.idempotency_header);
          }
          co_return Ok(protocol_->Accepted(req, batch, events.size(), /*repeat=*/true));
        }
        if (skip > 0) repeats_->Add();
        stream = checkpoint_->OpenStream(ctx_.name, idem, options_.idempotency_keep);
        checkpoint_->SetHead(stream, body_crc, body_bytes);
        idem_in_flight_.insert(idem);
      }
    }
    struct Release {
      PushSource* self;
      const std::string& key;
      uint32_t stream;
      ~Release() {
        if (stream == 0) return;
        self->checkpoint_->ReleaseStream(stream);
        self->idem_in_flight_.erase(key);
      }
    } release{this, idem, stream};
    if (skip > 0) events.erase(events.begin(), events.begin() + static_cast<ptrdiff_t>(skip));
    const int64_t now = ctx_.now_ns();
    for (Event& e : events) {
      e.source = ctx_.name;
      e.topic = topic;
      e.ingest_time_ns = now;
    }
    const size_t n = events.size();
    if (n == 0) co_return Ok(protocol_->Accepted(req, batch, skip, false));
    auto pending = std::make_shared<Pending>(ctx_.loop->io());
    pending->remaining = n;
    uint64_t first = 0;
    {
      std::lock_guard<std::mutex> lock(mu_);
      first = next_token_;
      next_token_ += n;
      pending_.emplace(first, pending);
    }
    if (!output_->TryEmitAll(events, this, first, stream, skip)) {
      {
        std::lock_guard<std::mutex> lock(mu_);
        pending_.erase(first);
      }
      ctx_.stats->Dropped("refused_full", n);
      uint64_t suppressed = 0;
      if (limiter_.Allow("full", &suppressed)) {
        SEEDANCE_LOG_WARN(ctx_.name, "pipeline full: answering 503 (backpressure)");
      }
      co_return Answer{bhttp::status::service_unavailable,
                       "the pipeline is full; nothing of this request was taken", 1};
    }
    ctx_.stats->events_in.Add(n);
    ctx_.stats->events_out.Add(n);
    error_code ec;
    pending->done.expires_after(options_.ack_timeout);
    co_await pending->done.async_wait(asio::redirect_error(use_awaitable, ec));
    bool complete = false;
    {
      std::lock_guard<std::mutex> lock(mu_);
      complete = pending->remaining == 0;
      if (!complete) pending_.erase(first);
    }
    if (!complete) {
      // Taken but not yet safe: the client must send it again (at least once).
      co_return Answer{bhttp::status::service_unavailable,
                       "the events were not stored within ack_timeout; send them again", 1};
    }
    co_return Ok(protocol_->Accepted(req, batch, skip + n, false));
  }

  awaitable<void> EmitInvalid(const std::string& body, const std::string& topic,
                              const std::string& reason) {
    Event e;
    e.source = ctx_.name;
    e.topic = topic;
    e.payload = body;
    e.format = PayloadFormat::kRaw;
    e.ingest_time_ns = e.event_time_ns = ctx_.now_ns();
    ctx_.stats->errors.Add();
    if (!output_->TryEmitInvalid(e, AckHandle{}, reason)) ctx_.stats->Dropped("invalid_refused");
    uint64_t suppressed = 0;
    if (limiter_.Allow("invalid", &suppressed)) {
      SEEDANCE_LOG_WARN(ctx_.name, "refused a request ({}): {}", topic,
                        util::SanitizeText(reason, 200));
    }
    co_return;
  }

  // Requests answered, by status; 0 counts refused TLS handshakes.
  void Count(int code) {
    auto it = requests_.find(code);
    if (it == requests_.end()) {
      it = requests_
               .emplace(code, &ctx_.metrics->GetCounter(
                                  "seedance_http_source_requests_total",
                                  "Requests answered by an http source, by status.",
                                  {{"component", ctx_.name}, {"status", std::to_string(code)}}))
               .first;
    }
    it->second->Add();
  }

  HttpSourceOptions options_;
  std::unique_ptr<PushProtocol> protocol_;
  PluginContext ctx_;
  SourceOutput* output_ = nullptr;
  PositionCheckpoint* checkpoint_ = nullptr;  // idempotency keys (stateful pipelines)
  std::set<std::string> idem_in_flight_;      // keys of requests being processed (event loop)
  std::shared_ptr<asio::ssl::context> tls_;   // null without tls
  std::unique_ptr<http::Server> server_;      // from Start
  std::mutex mu_;
  uint64_t next_token_ = 1;
  std::map<uint64_t, std::shared_ptr<Pending>> pending_;  // by first token
  std::map<int, observe::Counter*> requests_;
  observe::Counter* repeats_ = &ctx_.metrics->GetCounter(
      "seedance_http_source_repeats_total",
      "Requests sent again with an idempotency key whose events were already stored (wholly "
      "or in part): not counted twice.",
      {{"component", ctx_.name}});
  observe::Counter* bytes_ = &ctx_.metrics->GetCounter(
      "seedance_http_source_bytes_total", "Request body bytes read (as sent: compressed).",
      {{"component", ctx_.name}});
  observe::Histogram* latency_ = &ctx_.metrics->GetHistogram(
      "seedance_http_source_request_seconds",
      "From a request's arrival to its answer (for 200: every event stored).",
      {{"component", ctx_.name}});
  util::LogLimiter limiter_;
};

}  // namespace

Result<std::unique_ptr<Source>> MakePushSource(HttpSourceOptions options,
                                               std::unique_ptr<PushProtocol> protocol,
                                               const PluginContext& ctx) {
  auto source = std::make_unique<PushSource>(std::move(options), std::move(protocol), ctx);
  SEEDANCE_RETURN_IF_ERROR(source->InitTls());  // here: `validate` reports a bad file
  return std::unique_ptr<Source>(std::move(source));
}

}  // namespace seedance::sources
