#include "observe/http_listener.h"

#include <utility>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

namespace seedance::observe {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using asio::awaitable;
using asio::use_awaitable;
using asio::ip::tcp;
using boost::system::error_code;

struct HttpListener::State : std::enable_shared_from_this<HttpListener::State> {
  State(EventLoop& l, MetricsRegistry& m, std::function<bool()> h)
      : loop(l), metrics(m), healthy(std::move(h)), acceptor(l.io()) {}
  EventLoop& loop;
  MetricsRegistry& metrics;
  std::function<bool()> healthy;
  tcp::acceptor acceptor;
  bool stopped = false;

  awaitable<void> Accept(std::shared_ptr<State> self) {
    while (!stopped) {
      error_code ec;
      tcp::socket socket = co_await acceptor.async_accept(asio::redirect_error(use_awaitable, ec));
      if (ec) {
        if (stopped || ec == asio::error::operation_aborted) co_return;
        continue;
      }
      asio::co_spawn(loop.io(), Serve(self, beast::tcp_stream(std::move(socket))), asio::detached);
    }
  }

  awaitable<void> Serve([[maybe_unused]] std::shared_ptr<State> self, beast::tcp_stream stream) {
    beast::flat_buffer buffer;
    while (!stopped) {
      http::request<http::string_body> req;
      error_code ec;
      stream.expires_after(std::chrono::seconds(30));
      co_await http::async_read(stream, buffer, req, asio::redirect_error(use_awaitable, ec));
      if (ec) break;
      http::response<http::string_body> res{http::status::ok, req.version()};
      res.set(http::field::server, "seedance");
      res.keep_alive(req.keep_alive());
      std::string_view target(req.target().data(), req.target().size());
      target = target.substr(0, target.find('?'));
      if (req.method() != http::verb::get && req.method() != http::verb::head) {
        res.result(http::status::method_not_allowed);
        res.body() = "GET only\n";
      } else if (target == "/metrics") {
        res.set(http::field::content_type, "text/plain; version=0.0.4; charset=utf-8");
        res.body() = metrics.RenderPrometheus();
      } else if (target == "/healthz") {
        bool ok = healthy ? healthy() : true;
        res.result(ok ? http::status::ok : http::status::service_unavailable);
        res.body() = ok ? "ok\n" : "unhealthy\n";
      } else {
        res.result(http::status::not_found);
        res.body() = "try /metrics or /healthz\n";
      }
      res.prepare_payload();
      co_await http::async_write(stream, res, asio::redirect_error(use_awaitable, ec));
      if (ec || !res.keep_alive()) break;
    }
    error_code ignored;
    stream.socket().shutdown(tcp::socket::shutdown_both, ignored);
  }
};

HttpListener::HttpListener(EventLoop& loop, MetricsRegistry& metrics, std::function<bool()> healthy)
    : state_(std::make_shared<State>(loop, metrics, std::move(healthy))) {}

HttpListener::~HttpListener() = default;

Result<uint16_t> HttpListener::Start(const std::string& address) {
  size_t colon = address.rfind(':');
  if (colon == std::string::npos) {
    return InvalidArgumentError("metrics.listen: expected host:port, got \"" + address + "\"");
  }
  std::string host = address.substr(0, colon);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']')
    host = host.substr(1, host.size() - 2);
  if (host.empty()) host = "0.0.0.0";
  int port = std::atoi(address.c_str() + colon + 1);
  if (port < 0 || port > 65535)
    return InvalidArgumentError("metrics.listen: bad port in \"" + address + "\"");
  error_code ec;
  auto ip = asio::ip::make_address(host, ec);
  if (ec) return InvalidArgumentError("metrics.listen: \"" + host + "\" is not an IP address");
  tcp::endpoint ep(ip, static_cast<uint16_t>(port));
  auto& a = state_->acceptor;
  a.open(ep.protocol(), ec);
  if (!ec) a.set_option(tcp::acceptor::reuse_address(true), ec);
  if (!ec) a.bind(ep, ec);
  if (!ec) a.listen(asio::socket_base::max_listen_connections, ec);
  if (ec)
    return UnavailableError("metrics.listen: cannot listen on " + address + ": " + ec.message());
  uint16_t bound = a.local_endpoint().port();
  asio::co_spawn(state_->loop.io(), state_->Accept(state_), asio::detached);
  return bound;
}

void HttpListener::Stop() {
  state_->stopped = true;
  error_code ec;
  state_->acceptor.close(ec);
}

}  // namespace seedance::observe
