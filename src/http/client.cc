#include "http/client.h"

#include <fmt/format.h>
#include <boost/asio/connect.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>

#include <algorithm>

#include "util/tls_files.h"

namespace seedance::http {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace bhttp = beast::http;
using asio::ip::tcp;
using boost::system::error_code;

// A connection: a socket, or TLS over one, and its read buffer. Timeouts are the user's
// watchdog's (Abort()), not per-operation timers: those would allocate per request.
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

namespace {

using ResponseParser = bhttp::response_parser<bhttp::string_body, FieldsAllocator>;

// Feeds what `buffer` holds to `parser`, consuming it. True when the message is then
// complete; false (ec clear) when the parser needs more than the buffer has.
bool ParseBuffered(ResponseParser& parser, beast::flat_buffer& buffer, error_code& ec) {
  while (!parser.is_done() && buffer.size() > 0) {
    const size_t used = parser.put(buffer.data(), ec);
    buffer.consume(used);
    if (ec == bhttp::error::need_more) {
      ec = {};
      return false;
    }
    if (ec || used == 0) return false;
  }
  return parser.is_done();
}

}  // namespace

Exchange::Exchange() = default;
Exchange::~Exchange() = default;

std::string Exchange::TakeBody() {
  std::string body;
  if (request_) body = std::move(request_->body());
  body.clear();
  return body;
}

Result<std::shared_ptr<Client>> Client::Make(asio::io_context& io, ClientOptions options) {
  auto client = std::make_shared<Client>(io, std::move(options));
  if (client->options_.url.tls) {
    client->ssl_ = std::make_unique<asio::ssl::context>(asio::ssl::context::tls_client);
    SEEDANCE_RETURN_IF_ERROR(util::LoadCaFile(*client->ssl_, client->options_.ca_file));
    client->ssl_->set_verify_mode(client->options_.verify ? asio::ssl::verify_peer
                                                          : asio::ssl::verify_none);
  }
  return client;
}

Client::Client(asio::io_context& io, ClientOptions options)
    : io_(io), options_(std::move(options)), resolver_(io) {}

Client::~Client() = default;

ClientRequest& Client::NewRequest(Exchange& e, bhttp::verb method, std::string body) {
  e.request_.reset();
  e.request_arena_.release();
  e.request_.emplace(std::piecewise_construct, std::forward_as_tuple(std::move(body)),
                     std::make_tuple(FieldsAllocator(&e.request_arena_)));
  ClientRequest& req = *e.request_;
  req.method(method);
  req.target(options_.url.target);
  req.version(11);
  req.set(bhttp::field::host, options_.url.HostHeader());
  req.set(bhttp::field::user_agent, "seedance/" SEEDANCE_VERSION);
  req.keep_alive(true);
  return req;
}

// A completion handler for a step of `e`: keeps the client alive, allocates from e->slots_.
template <typename Fn>
auto Client::Step(Exchange* e, Fn fn) {
  return util::SlotHandler<Fn>{e->slots_, std::move(fn)};
}

std::shared_ptr<Client> Client::Hold(Exchange* e) {
  if (std::shared_ptr<void> owner = e->Owner()) return std::shared_ptr<Client>(owner, this);
  return shared_from_this();
}

void Client::Send(Exchange& e, uint64_t id) {
  e.id_ = id;
  e.aborted_ = false;
  e.request_->prepare_payload();
  busy_.push_back(&e);
  peak_busy_ = std::max(peak_busy_, busy_.size());
  Start(&e);
}

void Client::Abort(uint64_t id) {
  for (Exchange* e : busy_) {
    if (e->id_ != id) continue;
    e->aborted_ = true;
    if (e->conn_) e->conn_->Close();
  }
}

void Client::Stop() {
  stopped_ = true;
  for (Exchange* e : busy_) {
    if (e->conn_) e->conn_->Close();
  }
  for (auto& c : idle_) c->Close();
  idle_.clear();
  resolver_.cancel();
}

void Client::Release(Exchange* e) {
  e->conn_.reset();
  busy_.erase(std::find(busy_.begin(), busy_.end(), e));
}

void Client::KeepIdle(std::unique_ptr<Connection> conn) {
  if (conn->buffer.size() > 0) {
    // More than one response to one request: none of it can be trusted to belong to the
    // next request, so the connection goes.
    uint64_t suppressed = 0;
    if (limiter_.Allow("unsolicited", &suppressed)) {
      SEEDANCE_LOG_WARN(options_.component,
                        "{} sent {} bytes after a complete response; closing the connection",
                        options_.url.HostHeader(), conn->buffer.size());
    }
    conn->Close();
    return;
  }
  // As many idle as the most exchanges ever in flight at once: what the user's concurrency
  // has used, whatever it is.
  if (idle_.size() >= peak_busy_) return conn->Close();
  idle_.push_back(std::move(conn));
}

std::unique_ptr<Connection> Client::TakeIdle() {
  while (!idle_.empty()) {
    std::unique_ptr<Connection> conn = std::move(idle_.back());
    idle_.pop_back();
    error_code ec;
    const size_t waiting = conn->socket().available(ec);
    if (!ec && waiting == 0) return conn;
    // Bytes arrived while nothing was asked: an unsolicited response (or a TLS alert).
    uint64_t suppressed = 0;
    if (!ec && limiter_.Allow("unsolicited", &suppressed)) {
      SEEDANCE_LOG_WARN(options_.component, "{} sent {} bytes on an idle connection; closing it",
                        options_.url.HostHeader(), waiting);
    }
    conn->Close();
  }
  return nullptr;
}

void Client::Start(Exchange* e) {
  if (stopped_) return Fail(e, "the client stopped");
  if (auto conn = TakeIdle()) {
    e->conn_ = std::move(conn);
    e->reused_ = true;
    return Write(e);
  }
  e->reused_ = false;
  Connect(e);
}

void Client::Connect(Exchange* e) {
  e->conn_ = std::make_unique<Connection>();
  if (options_.url.tls)
    e->conn_->tls = std::make_unique<asio::ssl::stream<tcp::socket>>(io_, *ssl_);
  else
    e->conn_->plain = std::make_unique<tcp::socket>(io_);
  auto self = Hold(e);
  const Url& url = options_.url;
  resolver_.async_resolve(
      url.host, std::to_string(url.port),
      [self, e, &url](error_code ec, tcp::resolver::results_type endpoints) {
        if (ec) return self->Fail(e, fmt::format("cannot resolve {}: {}", url.host, ec.message()));
        asio::async_connect(
            e->conn_->socket(), endpoints, [self, e, &url](error_code ec, const tcp::endpoint&) {
              if (ec) {
                return self->Fail(e, fmt::format("cannot connect to {}:{}: {}", url.host, url.port,
                                                 ec.message()));
              }
              error_code ignored;
              e->conn_->socket().set_option(tcp::no_delay(true), ignored);
              if (!e->conn_->tls) return self->Write(e);
              auto& tls = *e->conn_->tls;
              SSL_set_tlsext_host_name(tls.native_handle(), url.host.c_str());
              if (self->options_.verify) {
                tls.set_verify_callback(asio::ssl::host_name_verification(url.host));
              }
              tls.async_handshake(asio::ssl::stream_base::client, [self, e](error_code ec) {
                if (ec) return self->Fail(e, "TLS handshake: " + ec.message());
                self->Write(e);
              });
            });
      });
}

void Client::Write(Exchange* e) {
  // Aborted while resolving or connecting (a socket closed before connect is opened again).
  if (e->aborted_) return Fail(e, "aborted at the timeout");
  e->interim_responses_ = 0;
  e->conn_->With([this, e](auto& stream) {
    bhttp::async_write(stream, *e->request_, Step(e, [self = Hold(e), e](error_code ec, size_t) {
                         if (ec) return self->Received(e, ec);
                         self->ReadResponse(e);
                       }));
  });
}

void Client::ReadResponse(Exchange* e) {
  e->response_arena_.release();
  e->parser_.reset();
  e->parser_.emplace(std::piecewise_construct, std::make_tuple(),
                     std::make_tuple(FieldsAllocator(&e->response_arena_)));
  e->parser_->body_limit(options_.max_response_body);
  e->header_read_ = false;
  e->body_cut_ = false;
  // The header first, then the body: Beast 1.74's eager parsing (what async_read of a whole
  // message does) skips the body_limit check on Content-Length and reserves whatever the
  // server announces, so "Content-Length: 66666666666666666" threw bad_alloc out of the
  // event loop (found by tests/fuzz/http_response_fuzz.cc). We check the length ourselves.
  e->conn_->With([this, e](auto& s) {
    bhttp::async_read_header(
        s, e->conn_->buffer, *e->parser_, Step(e, [self = Hold(e), e](error_code ec, size_t) {
          if (e->parser_->is_header_done()) {
            e->header_read_ = true;
            // A body announced over the limit is not read at all (the parser
            // stops there with body_limit): the status decides.
            const auto length = e->parser_->content_length();
            if (ec == bhttp::error::body_limit ||
                (length && *length > self->options_.max_response_body)) {
              e->body_cut_ = true;
              return self->ResponseRead(e, {});
            }
          }
          if (ec || e->parser_->is_done()) return self->ResponseRead(e, ec);
          // The body usually came with the header: parsed here from the
          // buffer, as async_read would, without its posted completion (a heap
          // allocation per request).
          if (ParseBuffered(*e->parser_, e->conn_->buffer, ec) || ec) {
            return self->ResponseRead(e, ec);
          }
          e->conn_->With([&self, e](auto& stream) {
            bhttp::async_read(
                stream, e->conn_->buffer, *e->parser_,
                self->Step(e, [self, e](error_code ec, size_t) { self->ResponseRead(e, ec); }));
          });
        }));
  });
}

void Client::ResponseRead(Exchange* e, error_code ec) {
  // 100 Continue, 102, 103: interim; the final answer follows. A few are normal; a server
  // that sends nothing else is broken.
  constexpr int kMaxInterim = 8;
  if (ec && e->header_read_ && !e->aborted_ && !stopped_) {
    // The body failed (over the limit, or the server closed in the middle): the status line
    // has the answer. Retrying would read the same answer again, for ever.
    e->body_cut_ = true;
    ec = {};
  }
  const unsigned code = ec ? 0 : e->parser_->get().result_int();
  if (code >= 100 && code < 200 && code != 101 && ++e->interim_responses_ <= kMaxInterim) {
    return ReadResponse(e);
  }
  if (code >= 100 && code < 200) {
    ec = asio::error::make_error_code(asio::error::connection_aborted);
  }
  Received(e, ec);
}

void Client::Received(Exchange* e, error_code ec) {
  if (ec) {
    e->conn_.reset();
    // The server closed a connection that was idle: this exchange opens a new one.
    if (e->reused_ && !e->aborted_ && !stopped_) return Start(e);
    return Fail(e, "HTTP exchange: " + ec.message());
  }
  const auto& r = e->parser_->get();
  Answer answer;
  answer.status = r.result_int();
  answer.reason = std::string_view(r.reason().data(), r.reason().size());
  answer.body = r.body();
  answer.body_cut = e->body_cut_;
  if (auto ra = r.find(bhttp::field::retry_after); ra != r.end()) {
    answer.retry_after = std::string_view(ra->value().data(), ra->value().size());
  }
  if (auto ct = r.find(bhttp::field::content_type); ct != r.end()) {
    answer.content_type = std::string_view(ct->value().data(), ct->value().size());
  }
  if (e->body_cut_ && !warned_body_cut_) {
    warned_body_cut_ = true;
    SEEDANCE_LOG_WARN(options_.component,
                      "{} answered {} with a body over {} KiB or cut short: its status decides, "
                      "the rest is discarded (logged once)",
                      options_.url.HostHeader(), answer.status, options_.max_response_body / 1024);
  }
  if (r.keep_alive() && !e->body_cut_) KeepIdle(std::move(e->conn_));
  Release(e);
  e->Answered(answer);
}

void Client::Fail(Exchange* e, std::string reason) {
  Release(e);
  e->Failed(std::move(reason), stopped_);
}

}  // namespace seedance::http
