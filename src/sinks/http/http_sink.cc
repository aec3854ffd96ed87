#include "sinks/http/http_sink.h"

#include <utility>  // before Asio: Boost 1.74's awaitable.hpp needs std::exchange

#include <fmt/format.h>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>

#include <cstddef>
#include <map>
#include <memory_resource>
#include <optional>
#include <random>
#include <set>

#include "core/plugin_context.h"
#include "governor/concurrency_controller.h"
#include "governor/memory_budget.h"
#include "sinks/common/event_encoding.h"
#include "sinks/http/http_url.h"
#include "util/log.h"

namespace seedance::sinks {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using asio::awaitable;
using asio::use_awaitable;
using boost::system::error_code;

struct HttpSinkOptions {
  HttpUrl url;
  std::string url_text;
  http::verb method = http::verb::post;
  StringPairs headers;
  EventEncoding encoding = EventEncoding::kPayload;
  BatchFormat format = BatchFormat::kJsonArray;
  size_t batch_size = 500;
  governor::ConcurrencyOptions concurrency;
  std::chrono::milliseconds timeout{5000};
  std::chrono::milliseconds retry_initial{100};
  std::chrono::milliseconds retry_max{30000};
  int64_t retry_limit = 0;  // 0 = forever
  std::string ca_file;
  bool tls_verify = true;
};

struct Connection {
  std::unique_ptr<beast::tcp_stream> plain;
  std::unique_ptr<beast::ssl_stream<beast::tcp_stream>> tls;
  beast::flat_buffer buffer;
  beast::tcp_stream& lowest() { return tls ? beast::get_lowest_layer(*tls) : *plain; }
  void Close() {
    error_code ec;
    lowest().socket().shutdown(asio::ip::tcp::socket::shutdown_both, ec);
    lowest().socket().close(ec);
  }
};

// Header fields live in arenas (a request's, a response parse's), not one heap block each.
using FieldsAllocator = std::pmr::polymorphic_allocator<char>;
using Fields = http::basic_fields<FieldsAllocator>;
using Request = http::request<http::string_body, Fields>;

// What Run needs of a response; the parsed message and its arena stay inside Exchange.
struct Reply {
  unsigned code = 0;
  bool keep_alive = false;
  std::chrono::seconds retry_after{0};
  std::string what;  // "HTTP 503 Service Unavailable: body…", built only when not 2xx
};

// A request, the arena of its header fields, and its body's charge to the memory budget.
// Pooled by the client: the fields are rebuilt in the arena for each batch, and a small body
// keeps its storage.
struct OutgoingRequest {
  alignas(std::max_align_t) std::byte arena_buffer[2048];
  std::pmr::monotonic_buffer_resource arena{arena_buffer, sizeof arena_buffer,
                                            std::pmr::new_delete_resource()};
  std::optional<Request> req;
  governor::MemoryBudget* budget = nullptr;
  uint64_t charged = 0;

  void Charge(governor::MemoryBudget* b) {
    budget = b;
    charged = req->body().capacity();
    if (budget) budget->Charge(charged);
  }
  void Uncharge() {
    if (budget) budget->Credit(charged);
    budget = nullptr;
    charged = 0;
  }
};

// Shared state of the sink, kept alive by the coroutines that use it.
class HttpClient : public std::enable_shared_from_this<HttpClient> {
 public:
  HttpClient(HttpSinkOptions o, PluginContext ctx)
      : o_(std::move(o)),
        ctx_(std::move(ctx)),
        controller_(o_.concurrency),
        limit_gauge_(ctx_.metrics->GetGauge("seedance_sink_concurrency_limit",
                                            "Requests the sink may have in flight.",
                                            {{"component", ctx_.name}})),
        in_flight_gauge_(ctx_.metrics->GetGauge("seedance_sink_in_flight",
                                                "Requests the sink has in flight.",
                                                {{"component", ctx_.name}})),
        p99_gauge_(ctx_.metrics->GetFloatGauge(
            "seedance_sink_latency_p99_seconds",
            "P99 request latency over the controller's window (adaptive concurrency).",
            {{"component", ctx_.name}})),
        pool_hits_(ctx_.metrics->GetCounter(
            "seedance_pool_hits_total", "Objects taken from a pool instead of allocated.",
            {{"pool", "http_request"}, {"component", ctx_.name}})),
        pool_misses_(ctx_.metrics->GetCounter(
            "seedance_pool_misses_total", "Objects allocated because their pool had none free.",
            {{"pool", "http_request"}, {"component", ctx_.name}})) {
    limit_gauge_.Set(controller_.limit());
  }

  int limit() const { return controller_.limit(); }

  Status Init() {
    if (!o_.url.tls) return Status::Ok();
    ssl_ = std::make_unique<asio::ssl::context>(asio::ssl::context::tls_client);
    error_code ec;
    if (!o_.ca_file.empty())
      ssl_->load_verify_file(o_.ca_file, ec);
    else
      ssl_->set_default_verify_paths(ec);
    if (ec) return InvalidArgumentError("TLS CA file: " + ec.message());
    ssl_->set_verify_mode(o_.tls_verify ? asio::ssl::verify_peer : asio::ssl::verify_none);
    return Status::Ok();
  }

  // Builds the request now (its body is charged to the memory budget before the runner
  // decides on its next batch) and sends it on a coroutine.
  void Deliver(std::shared_ptr<const Batch> batch, DeliveryCallback done) {
    std::unique_ptr<OutgoingRequest> req = TakeRequest();
    BuildRequest(*batch, *req);
    req->Charge(ctx_.memory);
    asio::co_spawn(ctx_.loop->io(),
                   Run(shared_from_this(), std::move(batch), std::move(req), std::move(done)),
                   asio::detached);
  }

  // Gives `batch` back if it is waiting between attempts (memory budget).
  bool Evict(const Batch& batch) {
    auto it = waiting_.find(&batch);
    if (it == waiting_.end() || stopped_) return false;
    evicted_.insert(&batch);
    it->second->cancel();
    return true;
  }

  void Stop() {
    stopped_ = true;
    for (auto* t : timers_) t->cancel();
    for (auto* c : active_) c->Close();
    for (auto& c : idle_) c->Close();
    idle_.clear();
  }

  const HttpSinkOptions& options() const { return o_; }

 private:
  std::unique_ptr<OutgoingRequest> TakeRequest();
  void ReturnRequest(std::unique_ptr<OutgoingRequest> req);
  void BuildRequest(const Batch& batch, OutgoingRequest& out) const;
  awaitable<void> Run(std::shared_ptr<HttpClient> self, std::shared_ptr<const Batch> batch,
                      std::unique_ptr<OutgoingRequest> request, DeliveryCallback done);
  awaitable<Result<std::unique_ptr<Connection>>> Connect();
  awaitable<Result<Reply>> Exchange(Connection& c, const Request& req);
  // Waits `d` between attempts of `batch`; false when the sink stopped or evicted the batch.
  awaitable<bool> Sleep(std::chrono::milliseconds d, const Batch* batch);

  HttpSinkOptions o_;
  PluginContext ctx_;
  std::unique_ptr<asio::ssl::context> ssl_;
  std::vector<std::unique_ptr<Connection>> idle_;
  std::set<Connection*> active_;
  std::set<asio::steady_timer*> timers_;
  std::map<const Batch*, asio::steady_timer*> waiting_;  // batches between attempts
  std::set<const Batch*> evicted_;
  std::vector<std::unique_ptr<OutgoingRequest>> free_requests_;
  governor::ConcurrencyController controller_;
  observe::Gauge& limit_gauge_;
  observe::Gauge& in_flight_gauge_;
  observe::FloatGauge& p99_gauge_;
  observe::Counter& pool_hits_;
  observe::Counter& pool_misses_;
  int in_flight_ = 0;
  bool stopped_ = false;
  bool failing_ = false;
  util::LogLimiter limiter_;
  std::mt19937 rng_{std::random_device{}()};
};

awaitable<Result<std::unique_ptr<Connection>>> HttpClient::Connect() {
  error_code ec;
  asio::ip::tcp::resolver resolver(ctx_.loop->io());
  auto endpoints = co_await resolver.async_resolve(o_.url.host, std::to_string(o_.url.port),
                                                   asio::redirect_error(use_awaitable, ec));
  if (ec)
    co_return UnavailableError(fmt::format("cannot resolve {}: {}", o_.url.host, ec.message()));
  auto c = std::make_unique<Connection>();
  if (o_.url.tls)
    c->tls = std::make_unique<beast::ssl_stream<beast::tcp_stream>>(ctx_.loop->io(), *ssl_);
  else
    c->plain = std::make_unique<beast::tcp_stream>(ctx_.loop->io());
  c->lowest().expires_after(o_.timeout);
  co_await c->lowest().async_connect(endpoints, asio::redirect_error(use_awaitable, ec));
  if (ec) {
    co_return UnavailableError(
        fmt::format("cannot connect to {}:{}: {}", o_.url.host, o_.url.port, ec.message()));
  }
  c->lowest().socket().set_option(asio::ip::tcp::no_delay(true), ec);
  if (c->tls) {
    SSL_set_tlsext_host_name(c->tls->native_handle(), o_.url.host.c_str());
    if (o_.tls_verify) c->tls->set_verify_callback(asio::ssl::host_name_verification(o_.url.host));
    co_await c->tls->async_handshake(asio::ssl::stream_base::client,
                                     asio::redirect_error(use_awaitable, ec));
    if (ec) co_return UnavailableError("TLS handshake: " + ec.message());
  }
  co_return c;
}

awaitable<Result<Reply>> HttpClient::Exchange(Connection& c, const Request& req) {
  error_code ec;
  c.lowest().expires_after(o_.timeout);
  if (c.tls)
    co_await http::async_write(*c.tls, req, asio::redirect_error(use_awaitable, ec));
  else
    co_await http::async_write(*c.plain, req, asio::redirect_error(use_awaitable, ec));
  if (ec) co_return UnavailableError("sending request: " + ec.message());
  // The response's fields go to an arena in this coroutine's frame.
  alignas(std::max_align_t) std::byte arena_buffer[1024];
  std::pmr::monotonic_buffer_resource arena(arena_buffer, sizeof arena_buffer,
                                            std::pmr::new_delete_resource());
  http::response_parser<http::string_body, FieldsAllocator> parser(
      std::piecewise_construct, std::make_tuple(), std::make_tuple(FieldsAllocator(&arena)));
  parser.body_limit(1 << 20);
  if (c.tls)
    co_await http::async_read(*c.tls, c.buffer, parser, asio::redirect_error(use_awaitable, ec));
  else
    co_await http::async_read(*c.plain, c.buffer, parser, asio::redirect_error(use_awaitable, ec));
  if (ec == beast::error::timeout)
    co_return DeadlineExceededError("no response within the timeout");
  if (ec) co_return UnavailableError("reading response: " + ec.message());
  const auto& r = parser.get();
  Reply reply;
  reply.code = r.result_int();
  reply.keep_alive = r.keep_alive();
  if (reply.code >= 200 && reply.code < 300) co_return reply;
  std::string snippet = r.body().substr(0, 200);
  for (char& ch : snippet) {
    if (static_cast<unsigned char>(ch) < 0x20) ch = ' ';  // one log line per failure
  }
  while (!snippet.empty() && snippet.back() == ' ') snippet.pop_back();
  reply.what = fmt::format("HTTP {} {}{}{}", reply.code, std::string(r.reason()),
                           snippet.empty() ? "" : ": ", snippet);
  auto ra = r.find(http::field::retry_after);
  if (ra != r.end()) {
    char* end = nullptr;
    std::string v(ra->value());
    long secs = std::strtol(v.c_str(), &end, 10);
    if (*end == '\0' && secs >= 0) reply.retry_after = std::chrono::seconds(std::min(secs, 3600L));
  }
  co_return reply;
}

awaitable<bool> HttpClient::Sleep(std::chrono::milliseconds d, const Batch* batch) {
  asio::steady_timer timer(ctx_.loop->io(), d);
  timers_.insert(&timer);
  waiting_.emplace(batch, &timer);
  error_code ec;
  co_await timer.async_wait(asio::redirect_error(use_awaitable, ec));
  timers_.erase(&timer);
  waiting_.erase(batch);
  co_return !stopped_ && !evicted_.count(batch);
}


std::unique_ptr<OutgoingRequest> HttpClient::TakeRequest() {
  if (free_requests_.empty()) {
    pool_misses_.Add();
    return std::make_unique<OutgoingRequest>();
  }
  pool_hits_.Add();
  std::unique_ptr<OutgoingRequest> r = std::move(free_requests_.back());
  free_requests_.pop_back();
  return r;
}

void HttpClient::ReturnRequest(std::unique_ptr<OutgoingRequest> r) {
  r->Uncharge();
  // Pooled requests keep small bodies' storage only: memory nobody counts stays small.
  constexpr size_t kKeepBody = 16 * 1024;
  constexpr size_t kKeepRequests = 8;
  if (r->req && r->req->body().capacity() > kKeepBody) r->req->body() = std::string();
  if (free_requests_.size() < kKeepRequests) free_requests_.push_back(std::move(r));
}

void HttpClient::BuildRequest(const Batch& batch, OutgoingRequest& out) const {
  std::string body;
  if (out.req) body = std::move(out.req->body());  // keeps its storage
  out.req.reset();
  out.arena.release();
  body.clear();
  AppendBatch(batch.events, o_.encoding, o_.format, body);
  out.req.emplace(std::piecewise_construct, std::forward_as_tuple(std::move(body)),
                  std::make_tuple(FieldsAllocator(&out.arena)));
  Request& req = *out.req;
  req.method(o_.method);
  req.target(o_.url.target);
  req.version(11);
  req.set(http::field::host, o_.url.HostHeader());
  req.set(http::field::user_agent, "seedance/" SEEDANCE_VERSION);
  req.set(http::field::content_type,
          ContentType(o_.format, o_.encoding, batch.events.empty() ? nullptr : &batch.events[0]));
  for (const auto& [name, value] : o_.headers) req.set(name, value);
  req.keep_alive(true);
  req.prepare_payload();
}

awaitable<void> HttpClient::Run([[maybe_unused]] std::shared_ptr<HttpClient> self,
                                std::shared_ptr<const Batch> batch,
                                std::unique_ptr<OutgoingRequest> request, DeliveryCallback done) {
  // Back to the pool on every way out (`self` outlives this: parameters go last).
  struct Recycle {
    HttpClient* client;
    std::unique_ptr<OutgoingRequest>& request;
    ~Recycle() { client->ReturnRequest(std::move(request)); }
  } recycle{this, request};
  const Request& req = *request->req;

  auto backoff = o_.retry_initial;
  int64_t attempt = 0;
  while (true) {
    if (stopped_) {
      done(CancelledError("sink stopped"));
      co_return;
    }
    std::unique_ptr<Connection> conn;
    bool reused = false;
    if (!idle_.empty()) {
      conn = std::move(idle_.back());
      idle_.pop_back();
      reused = true;
    }
    Status failure;
    std::chrono::milliseconds retry_after{0};
    if (!conn) {
      auto made = co_await Connect();
      if (made)
        conn = std::move(made).value();
      else
        failure = made.error();
    }
    if (conn) {
      active_.insert(conn.get());
      const int in_flight = ++in_flight_;
      in_flight_gauge_.Set(in_flight_);
      auto sent = std::chrono::steady_clock::now();
      Result<Reply> r = co_await Exchange(*conn, req);
      active_.erase(conn.get());
      --in_flight_;
      in_flight_gauge_.Set(in_flight_);
      const int64_t now_ns = ctx_.now_ns();
      controller_.RecordLatency(std::chrono::steady_clock::now() - sent, now_ns, in_flight);
      if (controller_.Update(now_ns)) {
        limit_gauge_.Set(controller_.limit());
        p99_gauge_.Set(controller_.p99_seconds());
      }
      if (!r && reused && !stopped_) {
        continue;  // the server closed an idle keep-alive connection; retry on a fresh one
      }
      if ((!r && r.error().code() == StatusCode::kDeadlineExceeded) ||
          (r && (r->code == 429 || r->code == 503))) {
        controller_.RecordBackpressure();  // applied at the controller's next update
      }
      if (!r) {
        failure = r.error();
      } else {
        const unsigned code = r->code;
        if (r->keep_alive && idle_.size() < static_cast<size_t>(o_.concurrency.max)) {
          idle_.push_back(std::move(conn));
        }
        if (code >= 200 && code < 300) {
          if (failing_) {
            failing_ = false;
            SEEDANCE_LOG_INFO(ctx_.name, "delivery to {} recovered", o_.url_text);
          }
          done(Status::Ok());
          co_return;
        }
        if (code == 408 || code == 429 || code >= 500) {
          failure = UnavailableError(r->what);
          retry_after = r->retry_after;
        } else {
          ctx_.stats->errors.Add();
          done(InvalidArgumentError(r->what));
          co_return;
        }
      }
    }
    if (stopped_) {
      done(CancelledError("sink stopped"));
      co_return;
    }
    ++attempt;
    ctx_.stats->retries.Add();
    if (o_.retry_limit > 0 && attempt > o_.retry_limit) {
      ctx_.stats->errors.Add();
      done(UnavailableError(
          fmt::format("gave up after {} attempts: {}", attempt, failure.message())));
      co_return;
    }
    auto ms = backoff.count();
    std::uniform_int_distribution<long long> jitter(ms / 2, std::max<long long>(ms, 1));
    auto delay = std::max(retry_after, std::chrono::milliseconds(jitter(rng_)));
    uint64_t suppressed = 0;
    if (!failing_ || limiter_.Allow("retry", &suppressed)) {
      failing_ = true;
      SEEDANCE_LOG_WARN(
          ctx_.name, "{} {} failed: {}; retrying in {} ms{}",
          std::string(http::to_string(o_.method)), o_.url_text, failure.message(), delay.count(),
          suppressed ? fmt::format(" ({} similar failures not logged)", suppressed) : "");
    }
    if (!co_await Sleep(delay, batch.get())) {
      if (evicted_.erase(batch.get()) > 0 && !stopped_) {
        done(ResourceExhaustedError("evicted by the memory budget"));
      } else {
        evicted_.erase(batch.get());
        done(CancelledError("sink stopped"));
      }
      co_return;
    }
    backoff = std::min(o_.retry_max, backoff * 2);
  }
}

class HttpSink final : public Sink {
 public:
  explicit HttpSink(std::shared_ptr<HttpClient> client) : client_(std::move(client)) {}
  Status Start() override { return client_->Init(); }
  void Deliver(std::shared_ptr<const Batch> batch, DeliveryCallback done) override {
    client_->Deliver(std::move(batch), std::move(done));
  }
  int MaxInFlight() const override { return client_->limit(); }
  bool Evict(const Batch& batch) override { return client_->Evict(batch); }
  size_t MaxBatchEvents() const override {
    return client_->options().format == BatchFormat::kSingle ? 1 : client_->options().batch_size;
  }
  void Stop() override { client_->Stop(); }

 private:
  std::shared_ptr<HttpClient> client_;
};

std::chrono::milliseconds Ms(std::chrono::nanoseconds d) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(d);
}

}  // namespace

SinkFactory HttpSinkFactory() {
  SinkFactory f;
  f.info.type = "http";
  f.info.kind = PluginKind::kSink;
  f.info.summary = "Sends batches of events to an HTTP(S) endpoint, with retries.";
  const auto positive = IntInRange(1);
  f.info.params = {
      {.name = "endpoint",
       .type = ParamType::kString,
       .doc = "URL to send events to, e.g. http://127.0.0.1:8080/v1/metrics",
       .required = true,
       .validator =
           [](const ParamValue& v) { return ParseHttpUrl(std::get<std::string>(v)).status(); }},
      {.name = "method",
       .type = ParamType::kString,
       .doc = "HTTP method",
       .default_value = "POST",
       .allowed = {"POST", "PUT"}},
      {.name = "headers",
       .type = ParamType::kStringMap,
       .doc = "extra request headers, e.g. Authorization: \"Bearer ${TOKEN}\""},
      {.name = "format",
       .type = ParamType::kString,
       .doc =
           "body: json_array (a batch as a JSON array), ndjson, or single (one event per request)",
       .default_value = "json_array",
       .allowed = {"json_array", "ndjson", "single"}},
      {.name = "encoding",
       .type = ParamType::kString,
       .doc = "each event as its payload, or as an envelope with id, topic, time and payload",
       .default_value = "payload",
       .allowed = {"payload", "envelope"}},
      {.name = "batch_size",
       .type = ParamType::kInt,
       .doc = "most events per request",
       .default_value = "500",
       .validator = positive},
      {.name = "concurrency",
       .type = ParamType::kObject,
       .doc = "requests in flight: a number (fixed), or a section for adaptive concurrency",
       .default_value = "4",
       .fields =
           {
               {.name = "adaptive",
                .type = ParamType::kBool,
                .doc = "follow latency (see docs/http-sink.md)",
                .default_value = "true"},
               {.name = "target_p99",
                .type = ParamType::kDuration,
                .doc = "request latency P99 to stay under",
                .default_value = "85ms"},
               {.name = "initial",
                .type = ParamType::kInt,
                .doc = "starting limit",
                .default_value = "4",
                .validator = positive},
               {.name = "min",
                .type = ParamType::kInt,
                .doc = "lowest limit",
                .default_value = "1",
                .validator = positive},
               {.name = "max",
                .type = ParamType::kInt,
                .doc = "highest limit",
                .default_value = "64",
                .validator = positive},
               {.name = "window",
                .type = ParamType::kDuration,
                .doc = "latencies considered for the P99",
                .default_value = "100ms"},
               {.name = "algorithm",
                .type = ParamType::kString,
                .doc = "headroom (default) or article (the article's rule, for comparison)",
                .default_value = "headroom",
                .allowed = {"headroom", "article"}},
           },
       .scalar_alternative = ParamType::kInt,
       .validator = IntInRange(1)},
      {.name = "timeout",
       .type = ParamType::kDuration,
       .doc = "per request (connect, send, answer)",
       .default_value = "5s"},
      {.name = "retry_initial",
       .type = ParamType::kDuration,
       .doc = "first retry delay",
       .default_value = "100ms"},
      {.name = "retry_max",
       .type = ParamType::kDuration,
       .doc = "longest retry delay",
       .default_value = "30s"},
      {.name = "retry_limit",
       .type = ParamType::kInt,
       .doc = "attempts before a batch goes to the rejected output (0 = retry forever)",
       .default_value = "0"},
      {.name = "tls",
       .type = ParamType::kObject,
       .doc = "TLS settings for https endpoints",
       .fields =
           {
               {.name = "ca_file",
                .type = ParamType::kString,
                .doc = "PEM CAs; system CAs when unset"},
               {.name = "verify",
                .type = ParamType::kBool,
                .doc = "verify the server certificate",
                .default_value = "true"},
           }},
  };
  f.create = [](const Params& p, PluginContext& ctx) -> Result<std::unique_ptr<Sink>> {
    HttpSinkOptions o;
    o.url_text = p.GetString("endpoint");
    SEEDANCE_ASSIGN_OR_RETURN(o.url, ParseHttpUrl(o.url_text));
    o.method = p.GetString("method") == "PUT" ? http::verb::put : http::verb::post;
    o.headers = p.GetStringMap("headers");
    o.format = ParseBatchFormat(p.GetString("format"));
    o.encoding = ParseEventEncoding(p.GetString("encoding"));
    o.batch_size = static_cast<size_t>(p.GetInt("batch_size"));
    if (p.IsObject("concurrency")) {
      const Params& c = p.GetObject("concurrency");
      o.concurrency.adaptive = c.GetBool("adaptive");
      o.concurrency.target_p99 = c.GetDuration("target_p99");
      o.concurrency.initial = static_cast<int>(c.GetInt("initial"));
      o.concurrency.min = static_cast<int>(c.GetInt("min"));
      o.concurrency.max = static_cast<int>(c.GetInt("max"));
      o.concurrency.window = c.GetDuration("window");
      o.concurrency.algorithm = c.GetString("algorithm") == "article"
                                    ? governor::ConcurrencyOptions::Algorithm::kArticle
                                    : governor::ConcurrencyOptions::Algorithm::kHeadroom;
      if (o.concurrency.min > o.concurrency.max) {
        return InvalidArgumentError(p.Location("concurrency") + ": concurrency.min exceeds max");
      }
    } else {
      o.concurrency.adaptive = false;
      o.concurrency.initial = static_cast<int>(p.GetInt("concurrency"));
      o.concurrency.min = o.concurrency.max = o.concurrency.initial;
    }
    o.timeout = Ms(p.GetDuration("timeout"));
    o.retry_initial = std::max(std::chrono::milliseconds(1), Ms(p.GetDuration("retry_initial")));
    o.retry_max = std::max(o.retry_initial, Ms(p.GetDuration("retry_max")));
    o.retry_limit = p.GetInt("retry_limit");
    const Params& tls = p.GetObject("tls");
    o.ca_file = tls.GetString("ca_file");
    o.tls_verify = tls.Has("verify") ? tls.GetBool("verify") : true;
    auto client = std::make_shared<HttpClient>(std::move(o), ctx);
    return std::unique_ptr<Sink>(new HttpSink(std::move(client)));
  };
  return f;
}

}  // namespace seedance::sinks
