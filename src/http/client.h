// Client: the one HTTP/1.1 client of the tree (the http and influxdb sinks through
// sinks/common/http_batch_sink.h, slo-check through fetch.h). It speaks requests and answers:
// what a request carries and what an answer means are its user's.
//
// - Keep-alive connections to one URL's host, pooled: as many kept idle as the most exchanges
//   ever in flight at once; one that a server closed while idle is reopened once, silently;
//   one on which bytes arrived that nobody asked for is closed, not reused.
// - TLS with SNI and host name verification (the system CAs, or a CA file).
// - A bounded response read: the header first, then at most `max_response_body` bytes of body
//   (a longer answer's status still decides, with what was read; see Answer::body_cut); up to
//   8 interim (1xx) answers skipped.
// - No timers of its own: the user's watchdog calls Abort(), which closes the exchange's
//   connection, and the exchange fails.
// - No heap allocation per request on a kept-alive connection: the request's header fields,
//   the response parser and the handlers' memory live in the Exchange, which the user pools.
//
// Not thread-safe: the io_context's thread only.
#pragma once

#include <utility>  // Boost 1.74's awaitable.hpp uses std::exchange without including it.

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl/context.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http/message.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/string_body.hpp>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <memory_resource>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "http/url.h"
#include "seedance/result.h"
#include "util/handler_slot.h"
#include "util/log.h"

namespace seedance::http {

// Header fields live in arenas (a request's, a response parse's), not one heap block each.
using FieldsAllocator = std::pmr::polymorphic_allocator<char>;
using ClientFields = boost::beast::http::basic_fields<FieldsAllocator>;
using ClientRequest = boost::beast::http::request<boost::beast::http::string_body, ClientFields>;

// A final answer. The views point into the exchange and are valid during Answered().
struct Answer {
  unsigned status = 0;
  std::string_view reason;
  std::string_view body;  // at most max_response_body of it
  std::optional<std::string_view> retry_after;
  std::string_view content_type;  // "" when the answer named none
  // The body was over max_response_body or ended early: `body` is what was read.
  bool body_cut = false;
};

struct ClientOptions {
  Url url;
  std::string ca_file;  // empty: the system CAs
  bool verify = true;   // the server's certificate and host name
  uint64_t max_response_body = 1 << 20;
  std::string component;  // names the client in logs
};

class Client;
struct Connection;

// One request on its way. A user derives from it to carry what it needs when the answer comes,
// and reuses it for the next request.
class Exchange {
 public:
  Exchange();
  virtual ~Exchange();
  Exchange(const Exchange&) = delete;
  Exchange& operator=(const Exchange&) = delete;

  ClientRequest& request() { return *request_; }
  // The storage of the last request's body, for the next one (empty, its capacity kept).
  std::string TakeBody();

 protected:
  // The final answer. The client is done with the exchange: it may be reused or freed.
  virtual void Answered(const Answer& answer) = 0;
  // No answer: `reason` says why (resolve, connect, TLS, the exchange, an abort). `stopped`:
  // the client was stopped. The client is done with the exchange.
  virtual void Failed(std::string reason, bool stopped) = 0;
  // What owns this exchange and keeps the client alive (e.g. a sink holding both): each
  // pending step of the exchange holds it, so the owner outlives the steps however they end
  // (run, or destroyed with the io_context unrun), and nothing need hold it in a cycle. Null:
  // the steps hold the client only.
  virtual std::shared_ptr<void> Owner() { return nullptr; }

 private:
  friend class Client;
  using ResponseParser =
      boost::beast::http::response_parser<boost::beast::http::string_body, FieldsAllocator>;

  uint64_t id_ = 0;
  alignas(std::max_align_t) std::byte request_arena_buffer_[2048];
  std::pmr::monotonic_buffer_resource request_arena_{
      request_arena_buffer_, sizeof request_arena_buffer_, std::pmr::new_delete_resource()};
  std::optional<ClientRequest> request_;

  std::unique_ptr<Connection> conn_;
  bool reused_ = false;        // conn_ came from the idle pool
  bool aborted_ = false;       // Abort(): the connection was closed
  int interim_responses_ = 0;  // 1xx answers read before the final one
  bool header_read_ = false;   // the final answer's status line and header were read
  bool body_cut_ = false;

  alignas(std::max_align_t) std::byte response_arena_buffer_[1024];
  std::pmr::monotonic_buffer_resource response_arena_{
      response_arena_buffer_, sizeof response_arena_buffer_, std::pmr::new_delete_resource()};
  std::optional<ResponseParser> parser_;

  util::SharedSlot slots_ = util::MakeSlot();
};

class Client : public std::enable_shared_from_this<Client> {
 public:
  // Loads the TLS files for an https URL (errors name the file).
  static Result<std::shared_ptr<Client>> Make(boost::asio::io_context& io, ClientOptions options);
  Client(boost::asio::io_context& io, ClientOptions options);  // Make() is the way in
  ~Client();

  const Url& url() const { return options_.url; }

  // Starts a new request in `e` (the previous one's header fields released): `method` to the
  // URL's target, Host, User-Agent and keep-alive set, `body` as its body. The caller adds its
  // fields, then calls Send().
  ClientRequest& NewRequest(Exchange& e, boost::beast::http::verb method, std::string body);
  // Sends e's request (Content-Length set here) on an idle connection or a new one. `id`
  // names the exchange for Abort(). Exactly one of e.Answered() and e.Failed() follows (at
  // once, from inside Send(), when the client was stopped).
  void Send(Exchange& e, uint64_t id);
  // Closes exchange `id`'s connection; it fails.
  void Abort(uint64_t id);
  // Closes every connection; exchanges in flight fail with `stopped`, later ones at once.
  void Stop();

 private:
  template <typename Fn>
  auto Step(Exchange* e, Fn fn);
  // This client, held as the exchange's pending steps hold it: through e->Owner() when it has
  // one (an aliasing pointer), else by itself.
  std::shared_ptr<Client> Hold(Exchange* e);
  void Start(Exchange* e);
  void Connect(Exchange* e);
  void Write(Exchange* e);
  // Reads the answer to e's request, skipping interim (1xx) answers.
  void ReadResponse(Exchange* e);
  void ResponseRead(Exchange* e, boost::system::error_code ec);
  void Received(Exchange* e, boost::system::error_code ec);
  // Puts `conn` in the idle pool, unless bytes arrived that no request asked for.
  void KeepIdle(std::unique_ptr<Connection> conn);
  // Takes an idle connection that nothing arrived on since it went idle, or nullptr.
  std::unique_ptr<Connection> TakeIdle();
  void Fail(Exchange* e, std::string reason);
  // Takes `e` off the busy list: the client touches it no more.
  void Release(Exchange* e);

  boost::asio::io_context& io_;
  ClientOptions options_;
  std::unique_ptr<boost::asio::ssl::context> ssl_;
  boost::asio::ip::tcp::resolver resolver_;
  std::vector<std::unique_ptr<Connection>> idle_;
  std::vector<Exchange*> busy_;  // in flight (a vector: no node to allocate per exchange)
  size_t peak_busy_ = 0;         // the most in flight at once
  bool stopped_ = false;
  bool warned_body_cut_ = false;  // an answer over the body limit was logged
  util::LogLimiter limiter_;
};

}  // namespace seedance::http
