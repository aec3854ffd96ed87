#include "sinks/http/http_sink.h"

#include <utility>  // before Asio: Boost 1.74's awaitable.hpp needs std::exchange

#include <fmt/format.h>
#include <boost/asio/connect.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>

#include <algorithm>
#include <cctype>
#include <cstddef>
#include <map>
#include <memory_resource>
#include <optional>

#include "observe/metrics.h"
#include "seedance/options.h"
#include "seedance/plugin_context.h"
#include "sinks/common/event_encoding.h"
#include "sinks/http/response_policy.h"
#include "util/event_loop.h"
#include "util/handler_slot.h"
#include "util/http_url.h"
#include "util/log.h"
#include "util/strings.h"
#include "util/tls_files.h"

namespace seedance::sinks {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using boost::system::error_code;

struct HttpSinkOptions {
  util::HttpUrl url;  // of url_text
  std::string url_text;
  http::verb method = http::verb::post;
  StringPairs headers;
  std::vector<std::string> event_headers;  // names, or prefixes ending in '*' (format: single)
  EventEncoding encoding = EventEncoding::kPayload;
  BatchFormat format = BatchFormat::kJsonArray;
  struct Tls {
    std::string ca_file;
    bool verify = true;
  } tls;
};

// The most bytes of event headers one request carries (event_headers).
constexpr size_t kMaxEventHeaderBytes = 8192;

// The largest response body read (error bodies are quoted, 200 bytes of them, in reasons).
constexpr uint64_t kMaxResponseBody = 1 << 20;

// Header fields live in arenas (a request's, a response parse's), not one heap block each.
using FieldsAllocator = std::pmr::polymorphic_allocator<char>;
using Fields = http::basic_fields<FieldsAllocator>;
using Request = http::request<http::string_body, Fields>;
using ResponseParser = http::response_parser<http::string_body, FieldsAllocator>;
using tcp = asio::ip::tcp;

// A header name is an RFC 9110 token; a value has no control characters but HTAB (CR or LF
// would end the field and start another one: header injection, also through ${VAR}).
Status CheckHeaderFields(const ParamValue& v) {
  static constexpr std::string_view kTokenPunctuation = "!#$%&'*+-.^_`|~";
  for (const auto& [name, value] : std::get<StringPairs>(v)) {
    if (name.empty()) return InvalidArgumentError("a header name is empty");
    for (char c : name) {
      if (!std::isalnum(static_cast<unsigned char>(c)) &&
          kTokenPunctuation.find(c) == std::string_view::npos) {
        return InvalidArgumentError(
            fmt::format("header name \"{}\" has a character not allowed in a name ({:#04x})",
                        util::SanitizeText(name, 64), static_cast<unsigned char>(c)));
      }
    }
    for (char c : value) {
      const auto u = static_cast<unsigned char>(c);
      if ((u < 0x20 && c != '\t') || u == 0x7f) {
        return InvalidArgumentError(
            fmt::format("the value of header \"{}\" has a control character ({:#04x}); line breaks "
                        "would inject header fields",
                        name, u));
      }
    }
  }
  return Status::Ok();
}

// A connection: a socket, or TLS over one, and its read buffer. Timeouts are the client's
// watchdog's (see HttpClient), not per-operation timers: those would allocate per request.
struct Connection {
  std::unique_ptr<tcp::socket> plain;
  std::unique_ptr<asio::ssl::stream<tcp::socket>> tls;
  beast::flat_buffer buffer;
  tcp::socket& socket() { return tls ? tls->next_layer() : *plain; }
  void Close() {
    error_code ec;
    socket().shutdown(tcp::socket::shutdown_both, ec);
    socket().close(ec);
  }
  // Runs `op(stream)` on the TLS stream or the plain socket.
  template <typename Op>
  void With(Op&& op) {
    if (tls)
      op(*tls);
    else
      op(*plain);
  }
};

// One attempt on its way: its request (header fields in an arena, body charged to the memory
// budget), the connection it uses, the response parser. Pooled by the client; the steps in
// HttpClient are completion handlers whose operations take their memory from `slots`, so an
// attempt on a kept-alive connection makes no heap allocation.
struct Delivery {
  uint64_t id = 0;  // the runner's attempt id
  size_t events = 0;
  AttemptCallback done;
  alignas(std::max_align_t) std::byte request_arena_buffer[2048];
  std::pmr::monotonic_buffer_resource request_arena{
      request_arena_buffer, sizeof request_arena_buffer, std::pmr::new_delete_resource()};
  std::optional<Request> req;

  std::unique_ptr<Connection> conn;
  bool reused = false;        // conn came from the idle pool
  bool aborted = false;       // the runner's timeout: the connection was closed
  int interim_responses = 0;  // 1xx responses read before the final one

  alignas(std::max_align_t) std::byte response_arena_buffer[1024];
  std::pmr::monotonic_buffer_resource response_arena{
      response_arena_buffer, sizeof response_arena_buffer, std::pmr::new_delete_resource()};
  std::optional<ResponseParser> parser;

  util::SharedSlot slots = util::MakeSlot();
};

// Shared state of the sink, kept alive by the handlers that use it.
class HttpClient : public std::enable_shared_from_this<HttpClient> {
 public:
  HttpClient(HttpSinkOptions o, PluginContext ctx)
      : o_(std::move(o)),
        ctx_(std::move(ctx)),
        resolver_(ctx_.loop->io()),
        pool_hits_(ctx_.metrics->GetCounter("seedance_pool_hits_total",
                                            "Objects taken from a pool instead of allocated.",
                                            {{"pool", "http_request"}, {"component", ctx_.name}})),
        pool_misses_(ctx_.metrics->GetCounter(
            "seedance_pool_misses_total", "Objects allocated because their pool had none free.",
            {{"pool", "http_request"}, {"component", ctx_.name}})) {}

  Status Init() {
    if (!o_.url.tls) return Status::Ok();
    ssl_ = std::make_unique<asio::ssl::context>(asio::ssl::context::tls_client);
    SEEDANCE_RETURN_IF_ERROR(util::LoadCaFile(*ssl_, o_.tls.ca_file));
    ssl_->set_verify_mode(o_.tls.verify ? asio::ssl::verify_peer : asio::ssl::verify_none);
    return Status::Ok();
  }

  // Builds the request (the memory budget counts it with the batch: see the runner) and sends
  // it.
  void Attempt(uint64_t id, const Batch& batch, AttemptCallback done) {
    if (stopped_) return done(AttemptOutcome::Shutdown());
    Delivery* d = TakeDelivery();
    d->id = id;
    d->events = batch.events.size();
    d->done = std::move(done);
    d->aborted = false;
    BuildRequest(batch, *d);
    Start(d);
  }

  // The runner's timeout: closes the attempt's connection; its operation completes with an
  // error, reported as a retry.
  void Abort(uint64_t id) {
    for (Delivery* d : busy_) {
      if (d->id != id) continue;
      d->aborted = true;
      if (d->conn) d->conn->Close();
    }
  }

  void Stop() {
    stopped_ = true;
    for (Delivery* d : busy_) {
      if (d->conn) d->conn->Close();
    }
    for (auto& c : idle_) c->Close();
    idle_.clear();
    resolver_.cancel();
  }

  const HttpSinkOptions& options() const { return o_; }

 private:
  // A completion handler for a step of `d`: keeps the client alive, allocates from d->slots.
  template <typename Fn>
  util::SlotHandler<Fn> Step(Delivery* d, Fn fn) {
    return util::SlotHandler<Fn>{d->slots, std::move(fn)};
  }

  Delivery* TakeDelivery();
  void BuildRequest(const Batch& batch, Delivery& d) const;
  // The event's headers that `event_headers` names, as request header fields.
  void AddEventHeaders(const Event& e, Request& req) const;
  // Takes an idle connection or opens one, then sends.
  void Start(Delivery* d);
  void Connect(Delivery* d);
  void Send(Delivery* d);
  // Reads the response to `d`'s request, skipping interim (1xx) responses.
  void ReadResponse(Delivery* d);
  void ResponseRead(Delivery* d, error_code ec);
  void Received(Delivery* d, error_code ec);
  // Puts `conn` in the idle pool, unless bytes arrived that no request asked for.
  void KeepIdle(std::unique_ptr<Connection> conn);
  // Takes an idle connection that nothing arrived on since it went idle, or nullptr.
  std::unique_ptr<Connection> TakeIdle();
  // The connection failed: a retry, or a shutdown once the sink stopped.
  void Failed(Delivery* d, std::string reason);
  // Reports `outcome` for the attempt and puts the delivery back in the pool.
  void Finish(Delivery* d, AttemptOutcome outcome);

  HttpSinkOptions o_;
  PluginContext ctx_;
  std::unique_ptr<asio::ssl::context> ssl_;
  tcp::resolver resolver_;
  std::vector<std::unique_ptr<Connection>> idle_;
  std::vector<std::unique_ptr<Delivery>> deliveries_;  // every delivery ever made (the pool)
  std::vector<Delivery*> free_;                        // of those, the unused ones
  std::vector<Delivery*> busy_;  // the rest (a vector: no node to allocate per delivery)
  size_t peak_busy_ = 0;         // the most attempts in progress at once
  observe::Counter& pool_hits_;
  observe::Counter& pool_misses_;
  bool stopped_ = false;
  util::LogLimiter limiter_;
};

Delivery* HttpClient::TakeDelivery() {
  Delivery* d;
  if (free_.empty()) {
    pool_misses_.Add();
    deliveries_.push_back(std::make_unique<Delivery>());
    d = deliveries_.back().get();
  } else {
    pool_hits_.Add();
    d = free_.back();
    free_.pop_back();
  }
  busy_.push_back(d);
  peak_busy_ = std::max(peak_busy_, busy_.size());
  return d;
}

void HttpClient::BuildRequest(const Batch& batch, Delivery& d) const {
  std::string body;
  if (d.req) body = std::move(d.req->body());  // keeps its storage
  d.req.reset();
  d.request_arena.release();
  body.clear();
  AppendBatch(batch.events, o_.encoding, o_.format, body);
  d.req.emplace(std::piecewise_construct, std::forward_as_tuple(std::move(body)),
                std::make_tuple(FieldsAllocator(&d.request_arena)));
  Request& req = *d.req;
  req.method(o_.method);
  req.target(o_.url.target);
  req.version(11);
  req.set(http::field::host, o_.url.HostHeader());
  req.set(http::field::user_agent, "seedance/" SEEDANCE_VERSION);
  req.set(http::field::content_type,
          ContentType(o_.format, o_.encoding, batch.events.empty() ? nullptr : &batch.events[0]));
  for (const auto& [name, value] : o_.headers) req.set(name, value);
  if (!o_.event_headers.empty() && !batch.events.empty()) AddEventHeaders(batch.events[0], req);
  req.keep_alive(true);
  req.prepare_payload();
}

void HttpClient::AddEventHeaders(const Event& e, Request& req) const {
  // The values come from devices: a name that is not a token or a value with a control
  // character (a line break would inject header fields) is left out, and at most
  // kMaxEventHeaderBytes in all go out (a server answers 431 to more).
  size_t bytes = 0;
  for (const Header& h : e.headers) {
    const bool wanted =
        std::any_of(o_.event_headers.begin(), o_.event_headers.end(), [&](const std::string& w) {
          return w.ends_with('*') ? h.name.starts_with(std::string_view(w).substr(0, w.size() - 1))
                                  : h.name == w;
        });
    if (!wanted || bytes + h.name.size() + h.value.size() > kMaxEventHeaderBytes) continue;
    if (!CheckHeaderFields(StringPairs{{h.name, h.value}}).ok()) continue;
    bytes += h.name.size() + h.value.size();
    req.insert(h.name, h.value);
  }
}

void HttpClient::Finish(Delivery* d, AttemptOutcome outcome) {
  d->conn.reset();
  // Pooled deliveries keep small bodies' storage only: memory nobody counts stays small.
  if (d->req && d->req->body().capacity() > MemoryAccount::kPooledBufferBytes) {
    d->req->body() = std::string();
  }
  AttemptCallback done = std::move(d->done);
  d->done = nullptr;
  busy_.erase(std::find(busy_.begin(), busy_.end(), d));
  // As many as were ever in use at once: a steady load reuses them.
  if (free_.size() + busy_.size() < peak_busy_) {
    free_.push_back(d);
  } else {
    auto it = std::find_if(deliveries_.begin(), deliveries_.end(),
                           [d](const auto& p) { return p.get() == d; });
    // Not freed here: a completion handler of `d` may still be on the stack.
    asio::post(ctx_.loop->io(), [owned = std::shared_ptr<Delivery>(std::move(*it))] {});
    deliveries_.erase(it);
  }
  done(std::move(outcome));
}

void HttpClient::KeepIdle(std::unique_ptr<Connection> conn) {
  if (conn->buffer.size() > 0) {
    // More than one response to one request: none of it can be trusted to belong to the
    // next request, so the connection goes.
    uint64_t suppressed = 0;
    if (limiter_.Allow("unsolicited", &suppressed)) {
      SEEDANCE_LOG_WARN(ctx_.name,
                        "{} sent {} bytes after a complete response; closing the "
                        "connection",
                        o_.url_text, conn->buffer.size());
    }
    conn->Close();
    return;
  }
  // As many idle as the most attempts ever in progress at once: what the runner's concurrency
  // has used, whatever it is.
  if (idle_.size() >= peak_busy_) return conn->Close();
  idle_.push_back(std::move(conn));
}

std::unique_ptr<Connection> HttpClient::TakeIdle() {
  while (!idle_.empty()) {
    std::unique_ptr<Connection> conn = std::move(idle_.back());
    idle_.pop_back();
    error_code ec;
    const size_t waiting = conn->socket().available(ec);
    if (!ec && waiting == 0) return conn;
    // Bytes arrived while nothing was asked: an unsolicited response (or a TLS alert).
    uint64_t suppressed = 0;
    if (!ec && limiter_.Allow("unsolicited", &suppressed)) {
      SEEDANCE_LOG_WARN(ctx_.name, "{} sent {} bytes on an idle connection; closing it",
                        o_.url_text, waiting);
    }
    conn->Close();
  }
  return nullptr;
}

void HttpClient::Start(Delivery* d) {
  if (stopped_) return Finish(d, AttemptOutcome::Shutdown());
  if (auto conn = TakeIdle()) {
    d->conn = std::move(conn);
    d->reused = true;
    return Send(d);
  }
  d->reused = false;
  Connect(d);
}

void HttpClient::Connect(Delivery* d) {
  d->conn = std::make_unique<Connection>();
  if (o_.url.tls)
    d->conn->tls = std::make_unique<asio::ssl::stream<tcp::socket>>(ctx_.loop->io(), *ssl_);
  else
    d->conn->plain = std::make_unique<tcp::socket>(ctx_.loop->io());
  auto self = shared_from_this();
  resolver_.async_resolve(
      o_.url.host, std::to_string(o_.url.port),
      [self, d](error_code ec, tcp::resolver::results_type endpoints) {
        if (ec) {
          return self->Failed(
              d, fmt::format("cannot resolve {}: {}", self->o_.url.host, ec.message()));
        }
        asio::async_connect(
            d->conn->socket(), endpoints, [self, d](error_code ec, const tcp::endpoint&) {
              if (ec) {
                return self->Failed(d, fmt::format("cannot connect to {}:{}: {}", self->o_.url.host,
                                                   self->o_.url.port, ec.message()));
              }
              error_code ignored;
              d->conn->socket().set_option(tcp::no_delay(true), ignored);
              if (!d->conn->tls) return self->Send(d);
              auto& tls = *d->conn->tls;
              SSL_set_tlsext_host_name(tls.native_handle(), self->o_.url.host.c_str());
              if (self->o_.tls.verify) {
                tls.set_verify_callback(asio::ssl::host_name_verification(self->o_.url.host));
              }
              tls.async_handshake(asio::ssl::stream_base::client, [self, d](error_code ec) {
                if (ec) return self->Failed(d, "TLS handshake: " + ec.message());
                self->Send(d);
              });
            });
      });
}

void HttpClient::Send(Delivery* d) {
  // Aborted while resolving or connecting (a socket closed before connect is opened again).
  if (d->aborted) return Failed(d, "aborted at the timeout");
  d->interim_responses = 0;
  d->conn->With([this, d](auto& stream) {
    http::async_write(stream, *d->req,
                      Step(d, [self = shared_from_this(), d](error_code ec, size_t) {
                        if (ec) return self->Received(d, ec);
                        self->ReadResponse(d);
                      }));
  });
}

void HttpClient::ReadResponse(Delivery* d) {
  d->response_arena.release();
  d->parser.reset();
  d->parser.emplace(std::piecewise_construct, std::make_tuple(),
                    std::make_tuple(FieldsAllocator(&d->response_arena)));
  d->parser->body_limit(kMaxResponseBody);
  // The header first, then the body: Beast 1.74's eager parsing (what async_read of a whole
  // message does) skips the body_limit check on Content-Length and reserves whatever the
  // server announces, so "Content-Length: 66666666666666666" threw bad_alloc out of the
  // event loop (found by tests/fuzz/http_response_fuzz.cc). We check the length ourselves.
  d->conn->With([this, d](auto& s) {
    http::async_read_header(s, d->conn->buffer, *d->parser,
                            Step(d, [self = shared_from_this(), d](error_code ec, size_t) {
                              if (!ec) {
                                const auto length = d->parser->content_length();
                                if (length && *length > kMaxResponseBody)
                                  ec = http::error::body_limit;
                              }
                              if (ec || d->parser->is_done()) return self->ResponseRead(d, ec);
                              d->conn->With([&self, d](auto& stream) {
                                http::async_read(stream, d->conn->buffer, *d->parser,
                                                 self->Step(d, [self, d](error_code ec, size_t) {
                                                   self->ResponseRead(d, ec);
                                                 }));
                              });
                            }));
  });
}

void HttpClient::ResponseRead(Delivery* d, error_code ec) {
  // 100 Continue, 102, 103: interim; the final response follows. A few are normal; a server
  // that sends nothing else is broken.
  constexpr int kMaxInterim = 8;
  const unsigned code = ec ? 0 : d->parser->get().result_int();
  if (code >= 100 && code < 200 && code != 101 && ++d->interim_responses <= kMaxInterim) {
    return ReadResponse(d);
  }
  if (code >= 100 && code < 200) {
    ec = boost::asio::error::make_error_code(boost::asio::error::connection_aborted);
  }
  Received(d, ec);
}

void HttpClient::Received(Delivery* d, error_code ec) {
  if (ec) {
    d->conn.reset();
    // The server closed a connection that was idle: this attempt opens a new one.
    if (d->reused && !d->aborted && !stopped_) return Start(d);
    return Failed(d, "HTTP exchange: " + ec.message());
  }
  const auto& r = d->parser->get();
  std::optional<std::string_view> retry_after;
  if (auto ra = r.find(http::field::retry_after); ra != r.end()) {
    retry_after = std::string_view(ra->value().data(), ra->value().size());
  }
  ResponseVerdict verdict =
      ClassifyResponse(r.result_int(), std::string_view(r.reason().data(), r.reason().size()),
                       r.body(), retry_after, std::chrono::system_clock::now());
  if (r.keep_alive()) {
    KeepIdle(std::move(d->conn));
  } else {
    d->conn.reset();
  }
  switch (verdict.kind) {
    case ResponseVerdict::Kind::kDelivered:
      return Finish(d, AttemptOutcome::Delivered());
    case ResponseVerdict::Kind::kTooLarge:
      return Finish(d, AttemptOutcome::TooLarge(std::move(verdict.what)));
    case ResponseVerdict::Kind::kRejected:
      return Finish(d, AttemptOutcome::Rejected(std::move(verdict.what)));
    case ResponseVerdict::Kind::kRetry:
      return Finish(d, AttemptOutcome::Retry(std::move(verdict.what), verdict.retry_after,
                                             verdict.backpressure));
  }
}

void HttpClient::Failed(Delivery* d, std::string reason) {
  d->conn.reset();
  if (stopped_) return Finish(d, AttemptOutcome::Shutdown());
  Finish(d, AttemptOutcome::Retry(fmt::format("{} {}: {}", std::string(http::to_string(o_.method)),
                                              o_.url_text, reason)));
}

class HttpSink final : public Sink {
 public:
  explicit HttpSink(std::shared_ptr<HttpClient> client) : client_(std::move(client)) {}
  Status Start() override { return Status::Ok(); }  // TLS files were loaded by create
  void Attempt(uint64_t id, const Batch& batch, AttemptCallback done) override {
    client_->Attempt(id, batch, std::move(done));
  }
  void Abort(uint64_t id) override { client_->Abort(id); }
  size_t MaxBatchEvents() const override {
    return client_->options().format == BatchFormat::kSingle ? 1 : SIZE_MAX;
  }
  void Stop() override { client_->Stop(); }

 private:
  std::shared_ptr<HttpClient> client_;
};

}  // namespace

namespace {

const Options<HttpSinkOptions>& HttpSinkSchema() {
  using S = HttpSinkOptions;
  using Tls = HttpSinkOptions::Tls;
  static const Options<S> o =
      Options<S>()
          .Add(&S::url_text, {.name = "endpoint",
                              .doc = "URL to send events to, e.g. http://127.0.0.1:8080/v1/metrics",
                              .required = true,
                              .validator =
                                  [](const ParamValue& v) {
                                    return util::ParseHttpUrl(std::get<std::string>(v)).status();
                                  }})
          .Enum(&S::method, {.name = "method", .doc = "HTTP method", .default_value = "POST"},
                {{"POST", http::verb::post}, {"PUT", http::verb::put}})
          .Add(&S::headers,
               {.name = "headers",
                .doc = "extra request headers, e.g. Authorization: \"Bearer ${TOKEN}\"",
                .validator = CheckHeaderFields})
          .Add(&S::event_headers,
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
          .Section(&S::tls, {.name = "tls", .doc = "TLS settings for https endpoints"},
                   Options<Tls>()
                       .Add(&Tls::ca_file, {.name = "ca_file",
                                            .doc = "PEM CAs; system CAs when unset",
                                            .validator = util::CheckReadableFile})
                       .Add(&Tls::verify, {.name = "verify",
                                           .doc = "verify the server certificate",
                                           .default_value = "true"}))
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
}

}  // namespace

SinkFactory HttpSinkFactory() {
  SinkFactory f;
  f.info.type = "http";
  f.info.kind = PluginKind::kSink;
  f.info.summary = "Sends batches of events to an HTTP(S) endpoint, with retries.";
  // 3 ms: at 5k msg/s about 18 events per request instead of one, P99 under 8 ms with the
  // MQTT source's read_linger (bench/run linger, docs/http-sink.md); a request costs the
  // receiver far more than an event in a request.
  f.delivery = {.batch_linger = "3ms", .concurrent = true, .timeout = true};
  f.info.params = HttpSinkSchema().Specs();
  f.create = [](const Params& p, PluginContext& ctx) -> Result<std::unique_ptr<Sink>> {
    SEEDANCE_ASSIGN_OR_RETURN(HttpSinkOptions o, HttpSinkSchema().Bind(p));
    SEEDANCE_ASSIGN_OR_RETURN(o.url, util::ParseHttpUrl(o.url_text));
    auto client = std::make_shared<HttpClient>(std::move(o), ctx);
    // Here, not at Start: `validate` builds the sink too, so it reports a bad CA file.
    SEEDANCE_RETURN_IF_ERROR(client->Init());
    return std::unique_ptr<Sink>(new HttpSink(std::move(client)));
  };
  return f;
}

}  // namespace seedance::sinks
