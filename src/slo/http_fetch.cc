#include "slo/http_fetch.h"

#include <utility>

#include <sys/socket.h>
#include <sys/time.h>

#include <fmt/format.h>
#include <boost/asio/connect.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http.hpp>

#include "util/http_url.h"

namespace seedance::slo {
namespace asio = boost::asio;
namespace http = boost::beast::http;

Result<HttpReply> HttpRequest(const std::string& method, const std::string& url,
                              const std::string& body, const std::string& content_type,
                              std::chrono::milliseconds timeout) {
  SEEDANCE_ASSIGN_OR_RETURN(util::HttpUrl u, util::ParseHttpUrl(url));
  if (u.tls) {
    return Status(StatusCode::kInvalidArgument, "https is not supported here: " + url);
  }
  asio::io_context io;
  asio::ip::tcp::socket sock(io);
  boost::system::error_code ec;
  auto endpoints = asio::ip::tcp::resolver(io).resolve(u.host, std::to_string(u.port), ec);
  if (!ec) asio::connect(sock, endpoints, ec);
  if (ec) return Status(StatusCode::kUnavailable, fmt::format("{}: {}", url, ec.message()));
  timeval tv{};
  tv.tv_sec = timeout.count() / 1000;
  tv.tv_usec = (timeout.count() % 1000) * 1000;
  ::setsockopt(sock.native_handle(), SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  ::setsockopt(sock.native_handle(), SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);

  http::request<http::string_body> req{http::string_to_verb(method), u.target, 11};
  req.set(http::field::host, u.HostHeader());
  req.set(http::field::user_agent, "seedance/" SEEDANCE_VERSION);
  if (method != "GET") {
    req.set(http::field::content_type, content_type);
    req.body() = body;
  }
  req.prepare_payload();
  http::write(sock, req, ec);
  boost::beast::flat_buffer buffer;
  http::response_parser<http::string_body> parser;
  parser.body_limit(64u << 20);
  if (!ec) http::read(sock, buffer, parser, ec);
  if (ec) {
    return Status(StatusCode::kUnavailable, fmt::format("{} {}: {}", method, url, ec.message()));
  }
  return HttpReply{static_cast<int>(parser.get().result_int()), parser.get().body()};
}

}  // namespace seedance::slo
