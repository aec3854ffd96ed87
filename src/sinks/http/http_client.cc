#include "sinks/http/http_client.h"

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
#include <memory_resource>
#include <optional>

#include "observe/metrics.h"
#include "sinks/common/header_selection.h"
#include "sinks/http/response_policy.h"
#include "util/event_loop.h"
#include "util/handler_slot.h"
#include "util/log.h"
#include "util/strings.h"

namespace seedance::sinks {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using boost::system::error_code;

Status CheckHeaderFields(const ParamValue& v) {
  for (const auto& [name, value] : std::get<StringPairs>(v)) {
    SEEDANCE_RETURN_IF_ERROR(CheckHeaderField(name, value));
  }
  return Status::Ok();
}

namespace http_client_internal {

Status CheckEndpoint(const ParamValue& v) {
  return util::ParseHttpUrl(std::get<std::string>(v)).status();
}

Status CheckLevel(const HttpClientOptions& s, const Params& p) {
  const int max = util::MaxCompressionLevel(s.compression);
  if (s.compression_level < 0 || s.compression_level > max) {
    return InvalidArgumentError(
        p.Location("compression_level") +
        (s.compression == util::BodyCompression::kNone
             ? ": compression_level needs compression: gzip or zstd"
             : fmt::format(": compression_level: {} takes 1 to {} (0: its default, {})",
                           util::ContentEncoding(s.compression), max,
                           util::DefaultCompressionLevel(s.compression))));
  }
  return Status::Ok();
}

std::vector<std::pair<std::string, HttpMethod>> MethodChoices() {
  return {{"POST", HttpMethod::kPost}, {"PUT", HttpMethod::kPut}};
}

}  // namespace http_client_internal

AttemptOutcome HttpBatchCodec::Outcome(const Batch& /*batch*/, const HttpAnswer& a) const {
  ResponseVerdict verdict =
      ClassifyResponse(a.status, a.reason, a.body, a.retry_after, std::chrono::system_clock::now());
  switch (verdict.kind) {
    case ResponseVerdict::Kind::kDelivered:
      return AttemptOutcome::Delivered();
    case ResponseVerdict::Kind::kTooLarge:
      return AttemptOutcome::TooLarge(std::move(verdict.what));
    case ResponseVerdict::Kind::kRejected:
      return AttemptOutcome::Rejected(std::move(verdict.what));
    case ResponseVerdict::Kind::kRetry:
      break;
  }
  return AttemptOutcome::Retry(std::move(verdict.what), verdict.retry_after, verdict.backpressure);
}

namespace {

// The largest response body read (error bodies are quoted, 200 bytes of them, in reasons).
constexpr uint64_t kMaxResponseBody = 1 << 20;

// Header fields live in arenas (a request's, a response parse's), not one heap block each.
using FieldsAllocator = std::pmr::polymorphic_allocator<char>;
using Fields = http::basic_fields<FieldsAllocator>;
using Request = http::request<http::string_body, Fields>;
using ResponseParser = http::response_parser<http::string_body, FieldsAllocator>;
using tcp = asio::ip::tcp;

// Feeds what `buffer` holds to `parser`, consuming it. True when the message is then
// complete; false (ec clear) when the parser needs more than the buffer has.
bool ParseBuffered(ResponseParser& parser, beast::flat_buffer& buffer, error_code& ec) {
  while (!parser.is_done() && buffer.size() > 0) {
    const size_t used = parser.put(buffer.data(), ec);
    buffer.consume(used);
    if (ec == http::error::need_more) {
      ec = {};
      return false;
    }
    if (ec || used == 0) return false;
  }
  return parser.is_done();
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
  uint64_t id = 0;               // the runner's attempt id
  const Batch* batch = nullptr;  // valid until `done` runs

  AttemptCallback done;
  alignas(std::max_align_t) std::byte request_arena_buffer[2048];
  std::pmr::monotonic_buffer_resource request_arena{
      request_arena_buffer, sizeof request_arena_buffer, std::pmr::new_delete_resource()};
  std::optional<Request> req;

  std::unique_ptr<Connection> conn;
  bool reused = false;                    // conn came from the idle pool
  bool aborted = false;                   // the runner's timeout: the connection was closed
  bool compressed = false;                // the body is compressed (Content-Encoding)
  std::vector<RejectedEvent> unwritable;  // events the codec could not write
  int interim_responses = 0;              // 1xx responses read before the final one
  // The answer's status line and header were read; its body was over kMaxResponseBody or
  // ended early: the status decides, with what was read of the body, and the connection is
  // not reused.
  bool header_read = false;
  bool body_cut = false;

  alignas(std::max_align_t) std::byte response_arena_buffer[1024];
  std::pmr::monotonic_buffer_resource response_arena{
      response_arena_buffer, sizeof response_arena_buffer, std::pmr::new_delete_resource()};
  std::optional<ResponseParser> parser;

  util::SharedSlot slots = util::MakeSlot();
};

// Adds a codec's header fields to a request.
class RequestFieldWriter final : public HeaderFieldWriter {
 public:
  explicit RequestFieldWriter(Request& req) : req_(req) {}
  void Add(std::string_view name, std::string_view value) override {
    req_.insert(beast::string_view(name.data(), name.size()),
                beast::string_view(value.data(), value.size()));
  }

 private:
  Request& req_;
};

}  // namespace

// Shared state of the sink, kept alive by the handlers that use it.
class HttpClient : public std::enable_shared_from_this<HttpClient> {
 public:
  HttpClient(HttpClientOptions o, std::unique_ptr<HttpBatchCodec> codec, PluginContext ctx)
      : o_(std::move(o)),
        codec_(std::move(codec)),
        ctx_(std::move(ctx)),
        compressor_(o_.compression, o_.compression_level),
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
    d->batch = &batch;
    d->done = std::move(done);
    d->aborted = false;
    d->compressed = false;
    d->unwritable.clear();
    BuildRequest(batch, *d);
    if (d->unwritable.size() == batch.events.size() && !batch.events.empty()) {
      return Finish(d, AttemptOutcome::Delivered());  // nothing to send: all to `rejected`
    }
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

 private:
  // A completion handler for a step of `d`: keeps the client alive, allocates from d->slots.
  template <typename Fn>
  util::SlotHandler<Fn> Step(Delivery* d, Fn fn) {
    return util::SlotHandler<Fn>{d->slots, std::move(fn)};
  }

  Delivery* TakeDelivery();
  void BuildRequest(const Batch& batch, Delivery& d);
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

  HttpClientOptions o_;
  std::unique_ptr<HttpBatchCodec> codec_;
  PluginContext ctx_;
  util::BodyCompressor compressor_;
  std::string uncompressed_;  // the codec's body before compression (storage reused)
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
  bool warned_body_cut_ = false;  // an answer over the body limit was logged
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

void HttpClient::BuildRequest(const Batch& batch, Delivery& d) {
  std::string body;
  if (d.req) body = std::move(d.req->body());  // keeps its storage
  d.req.reset();
  d.request_arena.release();
  body.clear();
  std::string_view content_type;
  if (o_.compression == util::BodyCompression::kNone) {
    content_type = codec_->Encode(batch, body, d.unwritable);
  } else {
    uncompressed_.clear();
    content_type = codec_->Encode(batch, uncompressed_, d.unwritable);
    // Only an allocation failure fails here; the body then goes uncompressed.
    if (!compressor_.Compress(uncompressed_, body))
      body.assign(uncompressed_);
    else
      d.compressed = true;
    // A large batch's scratch storage is not kept (the budget counts the batch, not this).
    if (uncompressed_.capacity() > MemoryAccount::kPooledBufferBytes) uncompressed_ = {};
  }
  d.req.emplace(std::piecewise_construct, std::forward_as_tuple(std::move(body)),
                std::make_tuple(FieldsAllocator(&d.request_arena)));
  Request& req = *d.req;
  req.method(o_.method == HttpMethod::kPut ? http::verb::put : http::verb::post);
  req.target(o_.url.target);
  req.version(11);
  req.set(http::field::host, o_.url.HostHeader());
  req.set(http::field::user_agent, "seedance/" SEEDANCE_VERSION);
  req.set(http::field::content_type, beast::string_view(content_type.data(), content_type.size()));
  if (d.compressed) {
    const std::string_view encoding = util::ContentEncoding(o_.compression);
    req.set(http::field::content_encoding, beast::string_view(encoding.data(), encoding.size()));
  }
  for (const auto& [name, value] : o_.headers) req.set(name, value);
  RequestFieldWriter fields(req);
  codec_->AddHeaderFields(batch, fields);
  req.keep_alive(true);
  req.prepare_payload();
}

void HttpClient::Finish(Delivery* d, AttemptOutcome outcome) {
  d->conn.reset();
  // Pooled deliveries keep small bodies' storage only: memory nobody counts stays small.
  if (d->req && d->req->body().capacity() > MemoryAccount::kPooledBufferBytes) {
    d->req->body() = std::string();
  }
  if (outcome.kind == AttemptOutcome::Kind::kDelivered) {
    for (RejectedEvent& r : d->unwritable) outcome.rejected.push_back(std::move(r));
  }
  d->unwritable.clear();
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
  d->header_read = false;
  d->body_cut = false;
  // The header first, then the body: Beast 1.74's eager parsing (what async_read of a whole
  // message does) skips the body_limit check on Content-Length and reserves whatever the
  // server announces, so "Content-Length: 66666666666666666" threw bad_alloc out of the
  // event loop (found by tests/fuzz/http_response_fuzz.cc). We check the length ourselves.
  d->conn->With([this, d](auto& s) {
    http::async_read_header(
        s, d->conn->buffer, *d->parser,
        Step(d, [self = shared_from_this(), d](error_code ec, size_t) {
          if (d->parser->is_header_done()) {
            d->header_read = true;
            // A body announced over the limit is not read at all (the
            // parser stops there with body_limit): the status decides.
            const auto length = d->parser->content_length();
            if (ec == http::error::body_limit || (length && *length > kMaxResponseBody)) {
              d->body_cut = true;
              return self->ResponseRead(d, {});
            }
          }
          if (ec || d->parser->is_done()) return self->ResponseRead(d, ec);
          // The body usually came with the header: parsed here from the
          // buffer, as async_read would, without its posted completion
          // (a heap allocation per request).
          if (ParseBuffered(*d->parser, d->conn->buffer, ec) || ec) {
            return self->ResponseRead(d, ec);
          }
          d->conn->With([&self, d](auto& stream) {
            http::async_read(
                stream, d->conn->buffer, *d->parser,
                self->Step(d, [self, d](error_code ec, size_t) { self->ResponseRead(d, ec); }));
          });
        }));
  });
}

void HttpClient::ResponseRead(Delivery* d, error_code ec) {
  // 100 Continue, 102, 103: interim; the final response follows. A few are normal; a server
  // that sends nothing else is broken.
  constexpr int kMaxInterim = 8;
  if (ec && d->header_read && !d->aborted && !stopped_) {
    // The body failed (over the limit, or the server closed in the middle): the status line
    // has the answer. Retrying would read the same answer again, for ever.
    d->body_cut = true;
    ec = {};
  }
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
  HttpAnswer answer;
  answer.status = r.result_int();
  answer.reason = std::string_view(r.reason().data(), r.reason().size());
  answer.body = r.body();
  if (auto ra = r.find(http::field::retry_after); ra != r.end()) {
    answer.retry_after = std::string_view(ra->value().data(), ra->value().size());
  }
  if (d->body_cut && !warned_body_cut_) {
    warned_body_cut_ = true;
    SEEDANCE_LOG_WARN(ctx_.name,
                      "{} answered {} with a body over {} KiB or cut short: its status decides, "
                      "the rest is discarded (logged once)",
                      o_.url_text, answer.status, kMaxResponseBody / 1024);
  }
  AttemptOutcome outcome = codec_->Outcome(*d->batch, answer);
  if (r.keep_alive() && !d->body_cut) {
    KeepIdle(std::move(d->conn));
  } else {
    d->conn.reset();
  }
  Finish(d, std::move(outcome));
}

void HttpClient::Failed(Delivery* d, std::string reason) {
  d->conn.reset();
  if (stopped_) return Finish(d, AttemptOutcome::Shutdown());
  Finish(d, AttemptOutcome::Retry(fmt::format(
                "{} {}: {}", o_.method == HttpMethod::kPut ? "PUT" : "POST", o_.url_text, reason)));
}

namespace {

class HttpBatchSink final : public Sink {
 public:
  HttpBatchSink(std::shared_ptr<HttpClient> client, size_t max_batch)
      : client_(std::move(client)), max_batch_(max_batch) {}
  void Attempt(uint64_t id, const Batch& batch, AttemptCallback done) override {
    client_->Attempt(id, batch, std::move(done));
  }
  void Abort(uint64_t id) override { client_->Abort(id); }
  size_t MaxBatchEvents() const override { return max_batch_; }
  void Stop() override { client_->Stop(); }

 private:
  std::shared_ptr<HttpClient> client_;
  size_t max_batch_;
};

}  // namespace

Result<std::shared_ptr<HttpClient>> MakeHttpClient(HttpClientOptions o,
                                                   std::unique_ptr<HttpBatchCodec> codec,
                                                   PluginContext ctx) {
  SEEDANCE_ASSIGN_OR_RETURN(o.url, util::ParseHttpUrl(o.url_text));
  auto client = std::make_shared<HttpClient>(std::move(o), std::move(codec), std::move(ctx));
  SEEDANCE_RETURN_IF_ERROR(client->Init());
  return client;
}

std::unique_ptr<Sink> MakeHttpBatchSink(std::shared_ptr<HttpClient> client, size_t max_batch) {
  return std::make_unique<HttpBatchSink>(std::move(client), max_batch);
}

}  // namespace seedance::sinks
