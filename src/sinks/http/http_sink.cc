#include "sinks/http/http_sink.h"

#include <utility>  // before Asio: Boost 1.74's awaitable.hpp needs std::exchange

#include <fmt/format.h>
#include <boost/asio/connect.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>

#include <algorithm>
#include <cctype>
#include <cstddef>
#include <map>
#include <memory_resource>
#include <optional>
#include <random>

#include "core/plugin_context.h"
#include "governor/concurrency_controller.h"
#include "governor/memory_budget.h"
#include "sinks/common/event_encoding.h"
#include "sinks/http/http_url.h"
#include "sinks/http/response_policy.h"
#include "util/handler_slot.h"
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
        return InvalidArgumentError(fmt::format(
            "header name \"{}\" has a character not allowed in a name ({:#04x})",
            util::SanitizeText(name, 64), static_cast<unsigned char>(c)));
      }
    }
    for (char c : value) {
      const auto u = static_cast<unsigned char>(c);
      if ((u < 0x20 && c != '\t') || u == 0x7f) {
        return InvalidArgumentError(fmt::format(
            "the value of header \"{}\" has a control character ({:#04x}); line breaks "
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

// One batch on its way: its request (header fields in an arena, body charged to the memory
// budget), its attempts, the connection it uses, the response parser. Pooled by the client;
// the steps in HttpClient are completion handlers whose operations take their memory from
// `slots`, so a delivery on a kept-alive connection makes no heap allocation.
struct Delivery {
  explicit Delivery(asio::io_context& io) : timer(io) {}

  std::shared_ptr<const Batch> batch;
  DeliveryCallback done;
  alignas(std::max_align_t) std::byte request_arena_buffer[2048];
  std::pmr::monotonic_buffer_resource request_arena{
      request_arena_buffer, sizeof request_arena_buffer, std::pmr::new_delete_resource()};
  std::optional<Request> req;
  governor::MemoryBudget* budget = nullptr;
  uint64_t charged = 0;

  std::unique_ptr<Connection> conn;
  bool reused = false;  // conn came from the idle pool
  int64_t attempt = 0;
  std::chrono::milliseconds backoff{0};
  std::chrono::steady_clock::time_point sent;
  std::chrono::steady_clock::time_point deadline;  // of the current connect or exchange
  bool active = false;                             // watched by the watchdog
  bool timed_out = false;
  bool evicted = false;
  int in_flight_at_send = 0;
  int interim_responses = 0;  // 1xx responses read before the final one

  alignas(std::max_align_t) std::byte response_arena_buffer[1024];
  std::pmr::monotonic_buffer_resource response_arena{
      response_arena_buffer, sizeof response_arena_buffer, std::pmr::new_delete_resource()};
  std::optional<ResponseParser> parser;

  asio::steady_timer timer;  // backoff
  util::HandlerSlot slots;

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

// Shared state of the sink, kept alive by the handlers that use it.
class HttpClient : public std::enable_shared_from_this<HttpClient> {
 public:
  HttpClient(HttpSinkOptions o, PluginContext ctx)
      : o_(std::move(o)),
        ctx_(std::move(ctx)),
        resolver_(ctx_.loop->io()),
        watchdog_(ctx_.loop->io()),
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
    SEEDANCE_RETURN_IF_ERROR(util::LoadCaFile(*ssl_, o_.ca_file));
    ssl_->set_verify_mode(o_.tls_verify ? asio::ssl::verify_peer : asio::ssl::verify_none);
    return Status::Ok();
  }

  // Builds the request now (its body is charged to the memory budget before the runner
  // decides on its next batch) and starts the first attempt.
  void Deliver(std::shared_ptr<const Batch> batch, DeliveryCallback done) {
    Delivery* d = TakeDelivery();
    d->batch = std::move(batch);
    d->done = std::move(done);
    d->attempt = 0;
    d->backoff = o_.retry_initial;
    d->evicted = false;
    BuildRequest(*d->batch, *d);
    d->Charge(ctx_.memory);
    Attempt(d);
  }

  // Gives `batch` back if it is waiting between attempts (memory budget).
  bool Evict(const Batch& batch) {
    auto it = waiting_.find(&batch);
    if (it == waiting_.end() || stopped_) return false;
    it->second->evicted = true;
    it->second->timer.cancel();
    return true;
  }

  void Stop() {
    stopped_ = true;
    watchdog_.cancel();
    for (auto& [batch, d] : waiting_) d->timer.cancel();
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
    return util::SlotHandler<Fn>{&d->slots, std::move(fn)};
  }

  Delivery* TakeDelivery();
  void BuildRequest(const Batch& batch, Delivery& d) const;
  // Takes an idle connection or opens one, then sends.
  void Attempt(Delivery* d);
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
  // 413: delivers the batch of `d` as two halves, each split again on a 413, down to single
  // events, which are rejected. Completes `d`'s callback once both halves are done.
  void Split(Delivery* d, const std::string& what);
  // Gives `d` back to the pool and returns its callback, without calling it.
  DeliveryCallback Release(Delivery* d);
  // The attempt failed with `failure`: retries after a backoff, or gives up.
  void Retry(Delivery* d, const Status& failure, std::chrono::milliseconds retry_after);
  // Reports `outcome` for the batch and puts the delivery back in the pool.
  void Finish(Delivery* d, DeliveryOutcome outcome);
  // Marks `d` watched until `timeout` from now; the watchdog closes its connection after that.
  void Watch(Delivery* d);
  void Unwatch(Delivery* d);
  void ArmWatchdog();

  HttpSinkOptions o_;
  PluginContext ctx_;
  std::unique_ptr<asio::ssl::context> ssl_;
  tcp::resolver resolver_;
  asio::steady_timer watchdog_;
  bool watchdog_armed_ = false;
  util::HandlerSlot watchdog_slot_;
  std::vector<std::unique_ptr<Connection>> idle_;
  std::vector<std::unique_ptr<Delivery>> deliveries_;  // every delivery ever made (the pool)
  std::vector<Delivery*> free_;                         // of those, the unused ones
  std::vector<Delivery*> busy_;  // the rest (a vector: no node to allocate per delivery)
  std::map<const Batch*, Delivery*> waiting_;           // between attempts
  int watched_ = 0;
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

Delivery* HttpClient::TakeDelivery() {
  Delivery* d;
  if (free_.empty()) {
    pool_misses_.Add();
    deliveries_.push_back(std::make_unique<Delivery>(ctx_.loop->io()));
    d = deliveries_.back().get();
  } else {
    pool_hits_.Add();
    d = free_.back();
    free_.pop_back();
  }
  busy_.push_back(d);
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
  req.keep_alive(true);
  req.prepare_payload();
}

DeliveryCallback HttpClient::Release(Delivery* d) {
  Unwatch(d);
  d->conn.reset();
  d->Uncharge();
  // Pooled deliveries keep small bodies' storage only: memory nobody counts stays small.
  constexpr size_t kKeepBody = 16 * 1024;
  if (d->req && d->req->body().capacity() > kKeepBody) d->req->body() = std::string();
  DeliveryCallback done = std::move(d->done);
  d->done = nullptr;
  d->batch.reset();
  busy_.erase(std::find(busy_.begin(), busy_.end(), d));
  // As many as the sink may have in flight now: a steady load reuses them, a burst above the
  // limit does not leave more behind.
  if (free_.size() + busy_.size() < static_cast<size_t>(controller_.limit())) {
    free_.push_back(d);
  } else {
    auto it = std::find_if(deliveries_.begin(), deliveries_.end(),
                           [d](const auto& p) { return p.get() == d; });
    // Not freed here: a completion handler of `d` may still be on the stack.
    asio::post(ctx_.loop->io(), [owned = std::shared_ptr<Delivery>(std::move(*it))] {});
    deliveries_.erase(it);
  }
  return done;
}

void HttpClient::Finish(Delivery* d, DeliveryOutcome outcome) {
  DeliveryCallback done = Release(d);
  done(std::move(outcome));
}

void HttpClient::Split(Delivery* d, const std::string& what) {
  std::shared_ptr<const Batch> whole = d->batch;
  const size_t n = whole->events.size();
  const size_t half = n / 2;
  SEEDANCE_LOG_INFO(ctx_.name, "{}: sending the batch of {} events as {} and {}", what, n, half,
                    n - half);
  struct Halves {
    DeliveryCallback done;
    int pending = 2;
    bool cancelled = false;
    std::vector<RejectedEvent> rejected;
  };
  auto halves = std::make_shared<Halves>();
  halves->done = Release(d);
  for (size_t part = 0; part < 2; ++part) {
    const size_t first = part == 0 ? 0 : half;
    const size_t last = part == 0 ? half : n;
    auto batch = std::make_shared<Batch>();
    batch->events.assign(whole->events.begin() + static_cast<std::ptrdiff_t>(first),
                         whole->events.begin() + static_cast<std::ptrdiff_t>(last));
    Deliver(std::move(batch), [halves, first, last](DeliveryOutcome outcome) {
      const StatusCode code = outcome.status.code();
      if (code == StatusCode::kCancelled || code == StatusCode::kResourceExhausted) {
        halves->cancelled = true;  // delivered again as a whole (at least once)
      } else if (!outcome.status.ok()) {
        for (size_t i = first; i < last; ++i) {
          halves->rejected.push_back(RejectedEvent{i, outcome.status.message()});
        }
      } else {
        for (RejectedEvent& r : outcome.rejected) {
          halves->rejected.push_back(RejectedEvent{first + r.index, std::move(r.reason)});
        }
      }
      if (--halves->pending > 0) return;
      if (halves->cancelled) return halves->done(CancelledError("sink stopped"));
      DeliveryOutcome combined(Status::Ok());
      combined.rejected = std::move(halves->rejected);
      halves->done(std::move(combined));
    });
  }
}

void HttpClient::KeepIdle(std::unique_ptr<Connection> conn) {
  if (conn->buffer.size() > 0) {
    // More than one response to one request: none of it can be trusted to belong to the
    // next request, so the connection goes.
    uint64_t suppressed = 0;
    if (limiter_.Allow("unsolicited", &suppressed)) {
      SEEDANCE_LOG_WARN(ctx_.name, "{} sent {} bytes after a complete response; closing the "
                        "connection", o_.url_text, conn->buffer.size());
    }
    conn->Close();
    return;
  }
  if (idle_.size() >= static_cast<size_t>(o_.concurrency.max)) return conn->Close();
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

void HttpClient::Watch(Delivery* d) {
  d->deadline = std::chrono::steady_clock::now() + o_.timeout;
  d->timed_out = false;
  if (!d->active) {
    d->active = true;
    ++watched_;
  }
  ArmWatchdog();
}

void HttpClient::Unwatch(Delivery* d) {
  if (d->active) {
    d->active = false;
    --watched_;
  }
}

void HttpClient::ArmWatchdog() {
  if (watchdog_armed_ || stopped_ || watched_ == 0) return;
  watchdog_armed_ = true;
  // A tenth of the timeout, at least 10 ms: a request times out at most 10% late.
  auto tick = std::max(std::chrono::milliseconds(10), o_.timeout / 10);
  watchdog_.expires_after(tick);
  auto on_tick = [self = shared_from_this()](error_code ec) {
    self->watchdog_armed_ = false;
    if (ec || self->stopped_) return;
    const auto now = std::chrono::steady_clock::now();
    for (Delivery* d : self->busy_) {
      if (d->active && !d->timed_out && now >= d->deadline && d->conn) {
        d->timed_out = true;
        d->conn->Close();  // its operation completes with an error: a timeout
      }
    }
    self->ArmWatchdog();
  };
  watchdog_.async_wait(util::SlotHandler<decltype(on_tick)>{&watchdog_slot_, std::move(on_tick)});
}

void HttpClient::Attempt(Delivery* d) {
  if (stopped_) return Finish(d, CancelledError("sink stopped"));
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
  Watch(d);
  auto self = shared_from_this();
  resolver_.async_resolve(
      o_.url.host, std::to_string(o_.url.port),
      [self, d](error_code ec, tcp::resolver::results_type endpoints) {
        if (ec) {
          return self->Retry(d,
                             UnavailableError(fmt::format("cannot resolve {}: {}",
                                                          self->o_.url.host, ec.message())),
                             {});
        }
        asio::async_connect(
            d->conn->socket(), endpoints, [self, d](error_code ec, const tcp::endpoint&) {
              if (ec) {
                return self->Retry(
                    d,
                    d->timed_out ? DeadlineExceededError("connect timed out")
                                 : UnavailableError(fmt::format("cannot connect to {}:{}: {}",
                                                                self->o_.url.host,
                                                                self->o_.url.port, ec.message())),
                    {});
              }
              error_code ignored;
              d->conn->socket().set_option(tcp::no_delay(true), ignored);
              if (!d->conn->tls) return self->Send(d);
              auto& tls = *d->conn->tls;
              SSL_set_tlsext_host_name(tls.native_handle(), self->o_.url.host.c_str());
              if (self->o_.tls_verify) {
                tls.set_verify_callback(asio::ssl::host_name_verification(self->o_.url.host));
              }
              tls.async_handshake(asio::ssl::stream_base::client, [self, d](error_code ec) {
                if (ec) return self->Retry(d, UnavailableError("TLS handshake: " + ec.message()), {});
                self->Send(d);
              });
            });
      });
}

void HttpClient::Send(Delivery* d) {
  Watch(d);
  d->sent = std::chrono::steady_clock::now();
  d->in_flight_at_send = ++in_flight_;
  d->interim_responses = 0;
  in_flight_gauge_.Set(in_flight_);
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
    http::async_read_header(
        s, d->conn->buffer, *d->parser,
        Step(d, [self = shared_from_this(), d](error_code ec, size_t) {
          if (!ec) {
            const auto length = d->parser->content_length();
            if (length && *length > kMaxResponseBody) ec = http::error::body_limit;
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
  --in_flight_;
  in_flight_gauge_.Set(in_flight_);
  const int64_t now_ns = ctx_.now_ns();
  controller_.RecordLatency(std::chrono::steady_clock::now() - d->sent, now_ns,
                            d->in_flight_at_send);
  if (controller_.Update(now_ns)) {
    limit_gauge_.Set(controller_.limit());
    p99_gauge_.Set(controller_.p99_seconds());
  }
  if (ec) {
    const bool timed_out = d->timed_out;
    d->conn.reset();
    if (timed_out) {
      controller_.RecordBackpressure();
      return Retry(d, DeadlineExceededError("no response within the timeout"), {});
    }
    if (d->reused && !stopped_) return Attempt(d);  // the server closed an idle connection
    return Retry(d, UnavailableError("HTTP exchange: " + ec.message()), {});
  }
  const auto& r = d->parser->get();
  std::optional<std::string_view> retry_after;
  if (auto ra = r.find(http::field::retry_after); ra != r.end()) {
    retry_after = std::string_view(ra->value().data(), ra->value().size());
  }
  const ResponseVerdict verdict = ClassifyResponse(
      r.result_int(), std::string_view(r.reason().data(), r.reason().size()), r.body(),
      retry_after, d->batch->events.size(), o_.retry_max, std::chrono::system_clock::now());
  if (verdict.backpressure) controller_.RecordBackpressure();
  if (r.keep_alive()) {
    KeepIdle(std::move(d->conn));
  } else {
    d->conn.reset();
  }
  switch (verdict.kind) {
    case ResponseVerdict::Kind::kDelivered:
      if (failing_) {
        failing_ = false;
        SEEDANCE_LOG_INFO(ctx_.name, "delivery to {} recovered", o_.url_text);
      }
      return Finish(d, Status::Ok());
    case ResponseVerdict::Kind::kSplit:
      return Split(d, verdict.what);
    case ResponseVerdict::Kind::kRejected:
      ctx_.stats->errors.Add();
      return Finish(d, InvalidArgumentError(verdict.what));
    case ResponseVerdict::Kind::kRetry:
      return Retry(d, UnavailableError(verdict.what), verdict.retry_after);
  }
}

void HttpClient::Retry(Delivery* d, const Status& failure, std::chrono::milliseconds retry_after) {
  Unwatch(d);
  d->conn.reset();
  if (stopped_) return Finish(d, CancelledError("sink stopped"));
  ++d->attempt;
  ctx_.stats->retries.Add();
  if (o_.retry_limit > 0 && d->attempt > o_.retry_limit) {
    ctx_.stats->errors.Add();
    return Finish(d, UnavailableError(fmt::format("gave up after {} attempts: {}", d->attempt,
                                                  failure.message())));
  }
  auto ms = d->backoff.count();
  std::uniform_int_distribution<long long> jitter(ms / 2, std::max<long long>(ms, 1));
  auto delay = std::max(retry_after, std::chrono::milliseconds(jitter(rng_)));
  uint64_t suppressed = 0;
  if (!failing_ || limiter_.Allow("retry", &suppressed)) {
    failing_ = true;
    SEEDANCE_LOG_WARN(
        ctx_.name, "{} {} failed: {}; retrying in {} ms{}", std::string(http::to_string(o_.method)),
        o_.url_text, failure.message(), delay.count(),
        suppressed ? fmt::format(" ({} similar failures not logged)", suppressed) : "");
  }
  d->backoff = std::min(o_.retry_max, d->backoff * 2);
  waiting_[d->batch.get()] = d;
  d->timer.expires_after(delay);
  d->timer.async_wait(Step(d, [self = shared_from_this(), d](error_code) {
    self->waiting_.erase(d->batch.get());
    if (d->evicted && !self->stopped_) {
      return self->Finish(d, ResourceExhaustedError("evicted by the memory budget"));
    }
    if (self->stopped_) return self->Finish(d, CancelledError("sink stopped"));
    self->Attempt(d);
  }));
}

class HttpSink final : public Sink {
 public:
  explicit HttpSink(std::shared_ptr<HttpClient> client) : client_(std::move(client)) {}
  Status Start() override { return Status::Ok(); }  // TLS files were loaded by create
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
       .doc = "extra request headers, e.g. Authorization: \"Bearer ${TOKEN}\"",
       .validator = CheckHeaderFields},
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
                .doc = "PEM CAs; system CAs when unset",
                .validator = util::CheckReadableFile},
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
    // Here, not at Start: `validate` builds the sink too, so it reports a bad CA file.
    SEEDANCE_RETURN_IF_ERROR(client->Init());
    return std::unique_ptr<Sink>(new HttpSink(std::move(client)));
  };
  return f;
}

}  // namespace seedance::sinks
