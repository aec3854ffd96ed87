#include "observe/http_listener.h"

#include <fmt/format.h>

#include <utility>

#include "observe/connection_shedding.h"

namespace seedance::observe {

namespace bhttp = boost::beast::http;

namespace {

http::Response Answer(const http::Request& req, MetricsRegistry& metrics,
                      const std::function<bool()>& healthy) {
  http::Response res{bhttp::status::ok, req.version()};
  std::string_view target(req.target().data(), req.target().size());
  target = target.substr(0, target.find('?'));
  if (req.method() != bhttp::verb::get && req.method() != bhttp::verb::head) {
    res.result(bhttp::status::method_not_allowed);
    res.set(bhttp::field::allow, "GET, HEAD");
    res.body() = "GET only\n";
  } else if (target == "/metrics") {
    res.set(bhttp::field::content_type, "text/plain; version=0.0.4; charset=utf-8");
    res.body() = metrics.RenderPrometheus();
  } else if (target == "/healthz") {
    const bool ok = healthy ? healthy() : true;
    res.result(ok ? bhttp::status::ok : bhttp::status::service_unavailable);
    res.body() = ok ? "ok\n" : "unhealthy\n";
  } else {
    res.result(bhttp::status::not_found);
    res.body() = "try /metrics or /healthz\n";
  }
  return res;
}

}  // namespace

HttpListener::HttpListener(EventLoop& loop, MetricsRegistry& metrics, std::function<bool()> healthy)
    : server_(std::make_unique<http::Server>(
          loop.io(), "metrics",
          http::ServerLimits{.max_connections = kMaxListenerConnections,
                             .max_connections_per_client = kMaxListenerConnectionsPerClient,
                             .max_header_bytes = kMaxListenerHeaderBytes,
                             .max_body_bytes = kMaxListenerBodyBytes,
                             .idle_timeout = kListenerIdleTimeout},
          http::ServerHooks{
              .handle = [&metrics, healthy = std::move(healthy)](
                            const http::Request& req) -> boost::asio::awaitable<http::Response> {
                co_return Answer(req, metrics, healthy);
              },
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
  Result<uint16_t> port = server_->Listen(address);
  if (!port) return Status(port.error().code(), "metrics.listen: " + port.error().message());
  return port;
}

void HttpListener::Stop() { server_->Stop(); }

}  // namespace seedance::observe
