#include "observe/http_listener.h"

#include <fmt/format.h>

#include <boost/asio/redirect_error.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <charconv>
#include <optional>
#include <utility>

#include "http/query.h"
#include "observe/connection_shedding.h"
#include "util/listen_address.h"
#include "util/strings.h"

namespace seedance::observe {

namespace asio = boost::asio;
namespace bhttp = boost::beast::http;

namespace {

// A tap's chunks: what its ring holds, at most this much per chunk.
constexpr size_t kTapChunkBytes = 64 * 1024;
// How often an idle tap looks at its ring.
constexpr std::chrono::milliseconds kTapPoll{50};

http::Response Text(const http::Request& req, bhttp::status status, std::string body) {
  http::Response res{status, req.version()};
  res.set(bhttp::field::content_type, "text/plain; charset=utf-8");
  res.body() = std::move(body);
  return res;
}

// One client's tap, as the body of its answer: the ring's lines every kTapPoll, an empty line
// after kTapHeartbeat of silence, "" once the tap ended. Closes the tap when the answer ends.
class TapStream final : public http::ResponseStream {
 public:
  TapStream(asio::io_context& io, TapHub& hub, std::shared_ptr<Tap> tap)
      : timer_(io), hub_(hub), tap_(std::move(tap)) {
    hello_ = fmt::format("{{\"tap\":\"open\",\"slot\":{}}}\n", tap_->slot());
  }
  ~TapStream() override { hub_.Close(tap_); }

  // Pieces leave every kTapPoll at most, unless a chunk's worth waits: a tap costs a few
  // writes (and wake-ups of its client) a second, not one per event.
  asio::awaitable<std::string> Next() override {
    if (!hello_.empty()) co_return std::exchange(hello_, std::string());
    auto silent = std::chrono::steady_clock::duration::zero();
    while (!cancelled_) {
      if (tap_->waiting_bytes() < kTapChunkBytes) {
        timer_.expires_after(kTapPoll);
        boost::system::error_code ec;
        co_await timer_.async_wait(asio::redirect_error(asio::use_awaitable, ec));
        silent += kTapPoll;
        if (cancelled_) break;
      }
      std::string out;
      const bool ended = tap_->Take(out, kTapChunkBytes);
      if (!out.empty()) co_return out;
      if (ended) break;
      if (silent >= kTapHeartbeat) co_return std::string("\n");
    }
    co_return std::string();
  }
  void Cancel() override {
    cancelled_ = true;
    timer_.cancel();
  }

 private:
  asio::steady_timer timer_;
  TapHub& hub_;
  std::shared_ptr<Tap> tap_;
  std::string hello_;
  bool cancelled_ = false;
};

Result<TapFilter> ReadTapFilter(std::string_view target) {
  auto params = http::ParseQuery(target);
  if (!params) return params.error();
  TapFilter filter;
  for (const auto& [key, value] : *params) {
    auto number = [&, &value = value](uint64_t* out) -> Status {
      const auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), *out);
      if (ec != std::errc() || end != value.data() + value.size()) {
        return InvalidArgumentError(fmt::format("{}: expected a whole number, got \"{}\"", key,
                                                util::SanitizeText(value, 64)));
      }
      return Status::Ok();
    };
    if (key == "component") {
      filter.components.push_back(value);
    } else if (key == "output") {
      filter.outputs.push_back(value);
    } else if (key == "topic") {
      filter.topic = value;
    } else if (key == "sample") {
      SEEDANCE_RETURN_IF_ERROR(number(&filter.sample));
    } else if (key == "limit") {
      SEEDANCE_RETURN_IF_ERROR(number(&filter.limit));
    } else {
      return InvalidArgumentError(
          fmt::format("unknown parameter \"{}\" (try component, output, topic, sample, limit)",
                      util::SanitizeText(key, 64)));
    }
  }
  return filter;
}

}  // namespace

struct HttpListener::State {
  asio::io_context& io;
  MetricsRegistry& metrics;
  ListenerOptions options;
  bool loopback_only = true;  // set by Start

  // Whether `req` may open a tap; the refusal otherwise.
  std::optional<http::Response> Refusal(const http::Request& req) const {
    if (loopback_only) return std::nullopt;
    if (options.token.empty()) {
      return Text(req, bhttp::status::forbidden,
                  "taps and reloads are served beyond loopback only with metrics.token set\n");
    }
    const auto given = req[bhttp::field::authorization];
    const std::string_view text(given.data(), given.size());
    if (text.substr(0, 7) == "Bearer " && util::SameSecret(text.substr(7), options.token)) {
      return std::nullopt;
    }
    http::Response res = Text(req, bhttp::status::unauthorized, "bearer token required\n");
    res.set(bhttp::field::www_authenticate, "Bearer");
    return res;
  }

  http::StreamingAnswer OpenTap(const http::Request& req, std::string_view target) {
    if (options.taps == nullptr) return {Text(req, bhttp::status::not_found, "no taps here\n")};
    if (req.method() != bhttp::verb::get) {
      http::Response res = Text(req, bhttp::status::method_not_allowed, "GET only\n");
      res.set(bhttp::field::allow, "GET");
      return {std::move(res)};
    }
    if (auto refusal = Refusal(req)) return {std::move(*refusal)};
    auto filter = ReadTapFilter(target);
    if (!filter) return {Text(req, bhttp::status::bad_request, filter.error().message() + "\n")};
    auto tap = options.taps->Open(std::move(*filter));
    if (!tap) {
      const bool full = tap.error().code() == StatusCode::kResourceExhausted;
      http::Response res =
          Text(req, full ? bhttp::status::service_unavailable : bhttp::status::bad_request,
               tap.error().message() + "\n");
      if (full) res.set(bhttp::field::retry_after, "5");
      return {std::move(res)};
    }
    http::Response head{bhttp::status::ok, req.version()};
    head.set(bhttp::field::content_type, "application/x-ndjson");
    head.set(bhttp::field::cache_control, "no-store");
    return {std::move(head), std::make_unique<TapStream>(io, *options.taps, std::move(*tap))};
  }

  http::StreamingAnswer Reload(const http::Request& req) {
    if (!options.request_reload || !options.reload_state) {
      return {Text(req, bhttp::status::not_found, "no reloads here\n")};
    }
    if (req.method() != bhttp::verb::get && req.method() != bhttp::verb::post) {
      http::Response res = Text(req, bhttp::status::method_not_allowed, "GET or POST\n");
      res.set(bhttp::field::allow, "GET, POST");
      return {std::move(res)};
    }
    if (auto refusal = Refusal(req)) return {std::move(*refusal)};
    const bool post = req.method() == bhttp::verb::post;
    // The state before the request: the client waits for its reload count to move.
    std::string state = options.reload_state();
    if (post) options.request_reload();
    http::Response res{post ? bhttp::status::accepted : bhttp::status::ok, req.version()};
    res.set(bhttp::field::content_type, "application/json");
    res.set(bhttp::field::cache_control, "no-store");
    res.body() = std::move(state);
    return {std::move(res)};
  }

  http::StreamingAnswer Answer(const http::Request& req) {
    const std::string_view full(req.target().data(), req.target().size());
    const std::string_view target = http::TargetPath(full);
    if (target == "/tap") return OpenTap(req, full);
    if (target == "/reload") return Reload(req);
    if (req.method() != bhttp::verb::get && req.method() != bhttp::verb::head) {
      http::Response res = Text(req, bhttp::status::method_not_allowed, "GET only\n");
      res.set(bhttp::field::allow, "GET, HEAD");
      return {std::move(res)};
    }
    if (target == "/metrics") {
      http::Response res{bhttp::status::ok, req.version()};
      res.set(bhttp::field::content_type, "text/plain; version=0.0.4; charset=utf-8");
      res.body() = metrics.RenderPrometheus();
      return {std::move(res)};
    }
    if (target == "/healthz") {
      const bool ok = options.healthy ? options.healthy() : true;
      return {Text(req, ok ? bhttp::status::ok : bhttp::status::service_unavailable,
                   ok ? "ok\n" : "unhealthy\n")};
    }
    return {Text(req, bhttp::status::not_found, "try /metrics, /healthz, /tap or /reload\n")};
  }
};

HttpListener::HttpListener(EventLoop& loop, MetricsRegistry& metrics, ListenerOptions options)
    : state_(std::make_shared<State>(State{loop.io(), metrics, std::move(options)})),
      server_(std::make_unique<http::Server>(
          loop.io(), "metrics",
          http::ServerLimits{.max_connections = kMaxListenerConnections,
                             .max_connections_per_client = kMaxListenerConnectionsPerClient,
                             .max_header_bytes = kMaxListenerHeaderBytes,
                             .max_body_bytes = kMaxListenerBodyBytes,
                             .idle_timeout = kListenerIdleTimeout,
                             .stream_stall_timeout = kTapStallTimeout},
          http::ServerHooks{
              .handle = {},
              .handle_streaming = [state = state_](const http::Request& req)
                  -> asio::awaitable<http::StreamingAnswer> { co_return state->Answer(req); },
              .too_large = {},
              // Owned by the server's connections, which may end after this listener.
              .shed = [shedding = std::make_shared<ConnectionShedding>(
                           metrics, "metrics",
                           fmt::format("{} connections", kMaxListenerConnectionsPerClient))](
                          const std::string& client,
                          bool refused) { shedding->Shed(client, refused); },
              .tls_refused = {}})) {}

HttpListener::~HttpListener() = default;

Result<uint16_t> HttpListener::Start(const std::string& address) {
  auto endpoint = util::ParseListenAddress(address);
  if (endpoint) state_->loopback_only = endpoint->address().is_loopback();
  Result<uint16_t> port = server_->Listen(address);
  if (!port) return Status(port.error().code(), "metrics.listen: " + port.error().message());
  return port;
}

void HttpListener::SetToken(std::string token) { state_->options.token = std::move(token); }

void HttpListener::Stop() {
  server_->Stop();
  if (state_->options.taps != nullptr) state_->options.taps->EndAll();
}

}  // namespace seedance::observe
