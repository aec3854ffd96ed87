#include "observe/http_listener.h"

#include <fmt/format.h>

#include <utility>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

#include "observe/connection_shedding.h"
#include "util/connection_slots.h"
#include "util/http_close.h"
#include "util/listen_address.h"
#include "util/log.h"

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
      : loop(l),
        metrics(m),
        healthy(std::move(h)),
        acceptor(l.io()),
        slot_freed(l.io(), asio::steady_timer::time_point::max()),
        shedding(m, "metrics", fmt::format("{} connections", kMaxListenerConnectionsPerClient)) {}
  EventLoop& loop;
  MetricsRegistry& metrics;
  std::function<bool()> healthy;
  tcp::acceptor acceptor;
  asio::steady_timer slot_freed;  // never expires; cancelled when a connection ends
  util::ConnectionSlots slots{kMaxListenerConnections, kMaxListenerConnectionsPerClient};
  ConnectionShedding shedding;
  bool stopped = false;

  awaitable<void> Accept(std::shared_ptr<State> self) {
    auto& io = loop.io();
    while (!stopped) {
      error_code ec;
      tcp::socket socket = co_await acceptor.async_accept(asio::redirect_error(use_awaitable, ec));
      if (ec) {
        if (stopped || ec == asio::error::operation_aborted) co_return;
        // Out of descriptors (EMFILE) or memory: retrying at once would spin. Pause, and say
        // so once per minute.
        uint64_t suppressed = 0;
        if (limiter.Allow("accept", &suppressed)) {
          SEEDANCE_LOG_WARN("metrics", "cannot accept a connection: {}; pausing 100 ms",
                            ec.message());
        }
        asio::steady_timer pause(io, std::chrono::milliseconds(100));
        co_await pause.async_wait(asio::redirect_error(use_awaitable, ec));
        continue;
      }
      // Room for it: the connection idle longest goes; with every one busy, further clients
      // wait in the kernel's backlog, not in our memory (util/connection_slots.h).
      const int fd = socket.native_handle();
      const std::string client = util::PeerAddress(fd);
      const util::Admission admission =
          co_await util::Admit(slots, slot_freed, client, stopped,
                               [this, &client](bool refused) { shedding.Shed(client, refused); });
      if (admission == util::Admission::kStopped) co_return;
      if (admission == util::Admission::kRefuse) {
        socket.close(ec);
        continue;
      }
      const util::ConnectionSlots::Id id = slots.Add(client, util::ShutdownCloser(fd));
      asio::co_spawn(io, Serve(self, beast::tcp_stream(std::move(socket)), id), asio::detached);
    }
  }

  awaitable<void> Serve([[maybe_unused]] std::shared_ptr<State> self, beast::tcp_stream stream,
                        util::ConnectionSlots::Id id) {
    beast::flat_buffer buffer(kMaxListenerHeaderBytes);
    bool unread_input = false;  // answered before the request was read whole
    while (!stopped) {
      http::request_parser<http::string_body> parser;
      parser.header_limit(kMaxListenerHeaderBytes);
      parser.body_limit(kMaxListenerBodyBytes);
      error_code ec;
      // The whole request (headers and body) within the idle limit: a client that dribbles
      // bytes or says nothing loses its connection.
      stream.expires_after(kListenerIdleTimeout);
      // The header first: Beast 1.74's eager parsing (async_read of a whole message) skips the
      // body_limit check on Content-Length and reserves what the client announces, so one
      // "Content-Length: 66666666666666666" threw bad_alloc. The length is checked here.
      slots.SetIdle(id, true);  // until a whole header is in: it may be closed for another
      co_await http::async_read_header(stream, buffer, parser,
                                       asio::redirect_error(use_awaitable, ec));
      slots.SetIdle(id, false);
      if (!ec) {
        const auto length = parser.content_length();
        if (length && *length > kMaxListenerBodyBytes) ec = http::error::body_limit;
      }
      if (!ec && !parser.is_done()) {
        co_await http::async_read(stream, buffer, parser, asio::redirect_error(use_awaitable, ec));
      }
      if (ec == http::error::body_limit || ec == http::error::header_limit) {
        http::response<http::string_body> res{http::status::payload_too_large, 11};
        res.set(http::field::server, "seedance");
        res.keep_alive(false);
        res.body() = "request too large\n";
        res.prepare_payload();
        co_await http::async_write(stream, res, asio::redirect_error(use_awaitable, ec));
        unread_input = !ec;
        break;
      }
      if (ec) break;
      const http::request<http::string_body>& req = parser.get();
      http::response<http::string_body> res{http::status::ok, req.version()};
      res.set(http::field::server, "seedance");
      res.keep_alive(req.keep_alive());
      std::string_view target(req.target().data(), req.target().size());
      target = target.substr(0, target.find('?'));
      if (req.method() != http::verb::get && req.method() != http::verb::head) {
        res.result(http::status::method_not_allowed);
        res.set(http::field::allow, "GET, HEAD");
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
      stream.expires_after(kListenerIdleTimeout);
      if (req.method() == http::verb::head) {
        // The same header (Content-Length included), no body.
        http::response<http::empty_body> head{std::move(res.base())};
        co_await http::async_write(stream, head, asio::redirect_error(use_awaitable, ec));
      } else {
        co_await http::async_write(stream, res, asio::redirect_error(use_awaitable, ec));
      }
      if (ec || !req.keep_alive()) break;
    }
    co_await util::CloseAfterAnswer(stream, unread_input);
    slots.Remove(id);
    slot_freed.cancel_one();
  }

  util::LogLimiter limiter{std::chrono::minutes(1)};
};

HttpListener::HttpListener(EventLoop& loop, MetricsRegistry& metrics, std::function<bool()> healthy)
    : state_(std::make_shared<State>(loop, metrics, std::move(healthy))) {}

HttpListener::~HttpListener() = default;

Result<uint16_t> HttpListener::Start(const std::string& address) {
  auto ep = util::ParseListenAddress(address);
  if (!ep) return InvalidArgumentError("metrics.listen: " + ep.error().message());
  error_code ec;
  auto& a = state_->acceptor;
  a.open(ep->protocol(), ec);
  if (!ec) a.set_option(tcp::acceptor::reuse_address(true), ec);
  if (!ec) a.bind(*ep, ec);
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
  state_->slot_freed.cancel();
}

}  // namespace seedance::observe
