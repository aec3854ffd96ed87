#include "http/server.h"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>

#include "http/close.h"
#include "http/connection_slots.h"
#include "http/request_reader.h"
#include "util/listen_address.h"
#include "util/log.h"
#include "util/tls_files.h"

namespace seedance::http {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace bhttp = beast::http;
using asio::awaitable;
using asio::use_awaitable;
using asio::ip::tcp;
using boost::system::error_code;

Result<std::shared_ptr<asio::ssl::context>> MakeServerTls(const std::string& cert_file,
                                                          const std::string& key_file,
                                                          const std::string& client_ca_file) {
  auto tls = std::make_shared<asio::ssl::context>(asio::ssl::context::tls_server);
  tls->set_options(asio::ssl::context::default_workarounds | asio::ssl::context::no_sslv2 |
                   asio::ssl::context::no_sslv3 | asio::ssl::context::no_tlsv1 |
                   asio::ssl::context::no_tlsv1_1);
  SEEDANCE_RETURN_IF_ERROR(util::LoadCertificate(*tls, cert_file, key_file));
  if (!client_ca_file.empty()) {
    SEEDANCE_RETURN_IF_ERROR(util::LoadCaFile(*tls, client_ca_file, "tls.client_ca_file"));
    tls->set_verify_mode(asio::ssl::verify_peer | asio::ssl::verify_fail_if_no_peer_cert);
  }
  return tls;
}

namespace {

Response TooLargeText(TooLarge what) {
  Response res{bhttp::status::payload_too_large, 11};
  res.body() = what == TooLarge::kBody ? "request body too large\n" : "request header too large\n";
  return res;
}

}  // namespace

struct Server::State : std::enable_shared_from_this<Server::State> {
  State(asio::io_context& io_in, std::string component_in, ServerLimits limits_in,
        ServerHooks hooks_in, std::shared_ptr<asio::ssl::context> tls_in)
      : io(io_in),
        component(std::move(component_in)),
        limits(limits_in),
        hooks(std::move(hooks_in)),
        tls(std::move(tls_in)),
        acceptor(io),
        slot_freed(io, asio::steady_timer::time_point::max()),
        slots(limits.max_connections,
              std::min(limits.max_connections, limits.max_connections_per_client)) {}

  asio::io_context& io;
  const std::string component;
  const ServerLimits limits;
  const ServerHooks hooks;
  const std::shared_ptr<asio::ssl::context> tls;
  tcp::acceptor acceptor;
  asio::steady_timer slot_freed;  // never expires; cancelled when a connection ends
  ConnectionSlots slots;
  bool stopped = false;
  util::LogLimiter accept_limiter{std::chrono::minutes(1)};
  util::LogLimiter handshake_limiter;

  awaitable<void> Accept(std::shared_ptr<State> self) {
    while (!stopped) {
      error_code ec;
      tcp::socket socket = co_await acceptor.async_accept(asio::redirect_error(use_awaitable, ec));
      if (ec) {
        if (stopped || ec == asio::error::operation_aborted) co_return;
        // Out of descriptors (EMFILE) or memory: retrying at once would spin. Pause, and say
        // so once per minute.
        uint64_t suppressed = 0;
        if (accept_limiter.Allow("accept", &suppressed)) {
          SEEDANCE_LOG_WARN(component, "cannot accept a connection: {}; pausing 100 ms",
                            ec.message());
        }
        asio::steady_timer pause(io, std::chrono::milliseconds(100));
        co_await pause.async_wait(asio::redirect_error(use_awaitable, ec));
        continue;
      }
      // Room for it: the connection idle longest goes; with every one busy, further clients
      // wait in the kernel's backlog, not in our memory (connection_slots.h).
      const int fd = socket.native_handle();
      const std::string client = PeerAddress(fd);
      const Admission admission =
          co_await Admit(slots, slot_freed, client, stopped, [this, &client](bool refused) {
            if (hooks.shed) hooks.shed(client, refused);
          });
      if (admission == Admission::kStopped) co_return;
      if (admission == Admission::kRefuse) {
        socket.close(ec);
        continue;
      }
      const ConnectionSlots::Id id = slots.Add(client, ShutdownCloser(fd));
      if (tls) {
        asio::co_spawn(io, ServeTls(self, beast::tcp_stream(std::move(socket)), id),
                       asio::detached);
      } else {
        asio::co_spawn(io, Serve(self, beast::tcp_stream(std::move(socket)), id), asio::detached);
      }
    }
  }

  awaitable<void> ServeTls(std::shared_ptr<State> self, beast::tcp_stream tcp,
                           ConnectionSlots::Id id) {
    beast::ssl_stream<beast::tcp_stream> stream(std::move(tcp), *tls);
    error_code ec;
    beast::get_lowest_layer(stream).expires_after(limits.idle_timeout);
    co_await stream.async_handshake(asio::ssl::stream_base::server,
                                    asio::redirect_error(use_awaitable, ec));
    if (ec) {
      // Not TLS, or no client certificate we trust: refused, said once per 10 s with why.
      if (hooks.tls_refused) hooks.tls_refused();
      uint64_t suppressed = 0;
      if (handshake_limiter.Allow("handshake", &suppressed)) {
        SEEDANCE_LOG_WARN(component, "refused a TLS connection: {}", ec.message());
      }
      error_code ignored;
      beast::get_lowest_layer(stream).socket().close(ignored);
      Closed(id);
      co_return;
    }
    co_await Serve(std::move(self), std::move(stream), id);
  }

  void Closed(ConnectionSlots::Id id) {
    slots.Remove(id);
    slot_freed.cancel_one();
  }

  template <typename Stream>
  awaitable<void> Serve([[maybe_unused]] std::shared_ptr<State> self, Stream stream,
                        ConnectionSlots::Id id) {
    beast::flat_buffer buffer(limits.max_header_bytes);
    bool unread_input = false;  // answered before the request was read whole (413)
    while (!stopped) {
      RequestParser parser;
      // The whole request (header and body) within the idle limit: a client that dribbles
      // bytes or says nothing loses its connection.
      beast::get_lowest_layer(stream).expires_after(limits.idle_timeout);
      slots.SetIdle(id, true);  // until a whole header is in: it may be closed for another
      error_code ec = co_await ReadRequest(stream, buffer, parser, limits,
                                           [this, id] { slots.SetIdle(id, false); });
      Response res;
      bool head = false;
      if (ec == bhttp::error::body_limit || ec == bhttp::error::header_limit) {
        const TooLarge what = ec == bhttp::error::body_limit ? TooLarge::kBody : TooLarge::kHeader;
        res = hooks.too_large ? hooks.too_large(what) : TooLargeText(what);
        res.keep_alive(false);
      } else if (ec) {
        break;  // closed, timed out or unreadable: nobody to answer
      } else if (hooks.handle_streaming) {
        const Request& req = parser.get();
        StreamingAnswer answer = co_await hooks.handle_streaming(req);
        if (answer.stream) {
          co_await WriteStream(stream, req.version(), std::move(answer));
          break;
        }
        res = std::move(answer.response);
        res.version(req.version());
        res.keep_alive(req.keep_alive() && res.keep_alive());
        head = req.method() == bhttp::verb::head;
      } else {
        const Request& req = parser.get();
        res = co_await hooks.handle(req);
        res.version(req.version());
        res.keep_alive(req.keep_alive() && res.keep_alive());
        head = req.method() == bhttp::verb::head;
      }
      res.set(bhttp::field::server, "seedance");
      res.prepare_payload();
      if (head) {
        // The same header (Content-Length included), no body. The body is dropped rather than
        // the message written as an empty_body one: one write instantiation, not two per
        // stream type.
        const std::string length = std::to_string(res.body().size());
        res.body().clear();
        res.set(bhttp::field::content_length, length);
      }
      beast::get_lowest_layer(stream).expires_after(limits.idle_timeout);
      co_await bhttp::async_write(stream, res, asio::redirect_error(use_awaitable, ec));
      unread_input = !ec && res.result() == bhttp::status::payload_too_large && !res.keep_alive();
      if (ec || !res.keep_alive()) break;
    }
    co_await CloseAfterAnswer(beast::get_lowest_layer(stream), unread_input);
    Closed(id);
  }

  // A streamed answer: its header, then each piece as a chunk, then the last chunk. Ends at
  // the stream's end, a failed write or a write stalled past stream_stall_timeout.
  template <typename Stream>
  awaitable<void> WriteStream(Stream& stream, unsigned version, StreamingAnswer answer) {
    bhttp::response<bhttp::empty_body> head{answer.response.result(), version};
    for (const auto& field : answer.response) head.set(field.name_string(), field.value());
    head.set(bhttp::field::server, "seedance");
    head.chunked(true);
    head.keep_alive(false);
    bhttp::response_serializer<bhttp::empty_body> serializer{head};
    // The client says nothing more after its request: input (its close, most often) ends the
    // stream without waiting for the next write to fail.
    auto streaming = std::make_shared<bool>(true);
    beast::get_lowest_layer(stream).socket().async_wait(
        tcp::socket::wait_read, [streaming, body = answer.stream.get()](error_code) {
          if (*streaming) body->Cancel();
        });
    error_code ec;
    beast::get_lowest_layer(stream).expires_after(limits.stream_stall_timeout);
    co_await bhttp::async_write_header(stream, serializer, asio::redirect_error(use_awaitable, ec));
    while (!ec) {
      const std::string piece = co_await answer.stream->Next();
      beast::get_lowest_layer(stream).expires_after(limits.stream_stall_timeout);
      if (piece.empty()) {
        co_await asio::async_write(stream, bhttp::make_chunk_last(),
                                   asio::redirect_error(use_awaitable, ec));
        break;
      }
      co_await asio::async_write(stream, bhttp::make_chunk(asio::buffer(piece)),
                                 asio::redirect_error(use_awaitable, ec));
    }
    *streaming = false;
    error_code ignored;
    beast::get_lowest_layer(stream).socket().cancel(ignored);  // the wait for input
  }
};

Server::Server(asio::io_context& io, std::string component, ServerLimits limits, ServerHooks hooks,
               std::shared_ptr<asio::ssl::context> tls)
    : state_(std::make_shared<State>(io, std::move(component), limits, std::move(hooks),
                                     std::move(tls))) {}

Server::~Server() { Stop(); }

const ServerLimits& Server::limits() const { return state_->limits; }

Result<uint16_t> Server::Listen(const std::string& address) {
  auto ep = util::ParseListenAddress(address);
  if (!ep) return InvalidArgumentError(ep.error().message());
  error_code ec;
  auto& a = state_->acceptor;
  a.open(ep->protocol(), ec);
  if (!ec) a.set_option(tcp::acceptor::reuse_address(true), ec);
  if (!ec) a.bind(*ep, ec);
  if (!ec) a.listen(asio::socket_base::max_listen_connections, ec);
  if (ec) return UnavailableError("cannot listen on " + address + ": " + ec.message());
  const uint16_t bound = a.local_endpoint().port();
  asio::co_spawn(state_->io, state_->Accept(state_), asio::detached);
  return bound;
}

void Server::Stop() {
  if (state_->stopped) return;
  state_->stopped = true;
  error_code ec;
  state_->acceptor.close(ec);
  state_->slot_freed.cancel();
}

}  // namespace seedance::http
