// Server: the one HTTP/1.1 server loop of the tree (the http source, the metrics listener, the
// bench receivers), on an Asio io_context, one coroutine per connection.
//
// Anyone who can reach the port is untrusted, so what a client can cost is bounded:
// - connections: `max_connections`, `max_connections_per_client` from one address; when a new
//   client needs room the connection idle longest goes (connection_slots.h), so connections
//   held open and silent delay nobody;
// - a request's header (`max_header_bytes`) and body (`max_body_bytes`): 413 beyond, decided on
//   the header's Content-Length before any body byte is read or any memory reserved, and the
//   connection closed after a lingering close (close.h) so the client reads the 413;
// - time: a whole request, and an answer's write, within `idle_timeout`;
// - out of descriptors (EMFILE) or memory at accept: a 100 ms pause, logged once a minute.
// Keep-alive and pipelined requests are served in order on a connection; HEAD gets the GET
// answer's header without its body. TLS (with client certificates when asked) when a context
// is given: a failed handshake is refused, logged at most every 10 s, and counted by the user.
//
// Thread-compatible: create, Listen and Stop on the io_context's thread (or before it runs).
#pragma once

#include <utility>  // Boost 1.74's awaitable.hpp uses std::exchange without including it.

#include <boost/asio/awaitable.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ssl/context.hpp>
#include <boost/beast/http/message.hpp>
#include <boost/beast/http/string_body.hpp>
#include <boost/system/error_code.hpp>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "seedance/result.h"

namespace seedance::http {

using Request = boost::beast::http::request<boost::beast::http::string_body>;
using Response = boost::beast::http::response<boost::beast::http::string_body>;

struct ServerLimits {
  size_t max_connections = 64;
  size_t max_connections_per_client = 32;  // at most max_connections
  size_t max_header_bytes = 16 * 1024;
  uint64_t max_body_bytes = 4 << 20;
  std::chrono::nanoseconds idle_timeout = std::chrono::seconds(30);
  // A streamed answer's piece must be written within this (the client reads nothing).
  std::chrono::nanoseconds stream_stall_timeout = std::chrono::seconds(60);
};

enum class TooLarge { kHeader, kBody };

// A body written as it comes, chunked (Transfer-Encoding: chunked): the server writes each
// piece Next() gives until it gives "" or the client goes. A client that reads nothing for
// `ServerLimits::stream_stall_timeout` is disconnected; one that closes its side (or sends
// anything) ends the stream at once through Cancel(). The connection closes after a stream.
class ResponseStream {
 public:
  virtual ~ResponseStream() = default;
  // The next piece of the body, waited for as long as needed (on the loop); "" ends it.
  virtual boost::asio::awaitable<std::string> Next() = 0;
  // On the loop: the client went away; a Next() waiting should return "" soon.
  virtual void Cancel() {}
};

// An answer that may be a stream: with `stream` set, `response` gives the status and fields
// and the stream the body.
struct StreamingAnswer {
  Response response;
  std::unique_ptr<ResponseStream> stream;
};

struct ServerHooks {
  // Answers one request, on the loop. The connection stays open when both the request and
  // the answer are keep-alive. The server sets Server and Content-Length.
  std::function<boost::asio::awaitable<Response>(const Request&)> handle;
  // Set instead of `handle` by a server whose answers may be streams.
  std::function<boost::asio::awaitable<StreamingAnswer>(const Request&)> handle_streaming;
  // The answer to a request over a limit (the connection is then closed). Unset: 413 with a
  // one-line text body.
  std::function<Response(TooLarge)> too_large;
  // A connection closed, or refused (`refused`), to make room for `client` (connection_slots.h).
  std::function<void(const std::string& client, bool refused)> shed;
  // A TLS handshake failed (not TLS, no trusted client certificate). The server logs it.
  std::function<void()> tls_refused;
};

// A server TLS context: the certificate chain and key, and when `client_ca_file` is set,
// client certificates required and checked against it. TLS 1.2 and later.
Result<std::shared_ptr<boost::asio::ssl::context>> MakeServerTls(const std::string& cert_file,
                                                                 const std::string& key_file,
                                                                 const std::string& client_ca_file);

class Server {
 public:
  // `component` names the server in logs. `tls` may be null (plain HTTP).
  Server(boost::asio::io_context& io, std::string component, ServerLimits limits, ServerHooks hooks,
         std::shared_ptr<boost::asio::ssl::context> tls = nullptr);
  ~Server();  // stops
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  // Binds `address` ("127.0.0.1:9464", "[::1]:9464", ":9464" = every address) and serves.
  // Returns the bound port (useful with port 0); kInvalidArgument for a bad address,
  // kUnavailable when it cannot listen (the message says why).
  Result<uint16_t> Listen(const std::string& address);
  // Stops accepting; connections end after their current request.
  void Stop();

  const ServerLimits& limits() const;

 private:
  struct State;
  std::shared_ptr<State> state_;
};

}  // namespace seedance::http
