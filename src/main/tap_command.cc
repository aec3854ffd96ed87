// `seedance tap`: one GET /tap on the metrics listener (observe/http_listener.h), its chunked
// NDJSON answer copied to stdout line by line as it comes.
#include <fmt/format.h>

#include <boost/asio/connect.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <limits>
#include <string>

#include "http/query.h"
#include "http/url.h"
#include "main/commands.h"

namespace seedance::cli {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace bhttp = beast::http;

std::string TapTarget(const http::Url& base, const TapOptions& o) {
  std::string target = base.target;
  while (!target.empty() && target.back() == '/') target.pop_back();
  target += "/tap?sample=" + std::to_string(o.sample);
  if (o.limit != 0) target += "&limit=" + std::to_string(o.limit);
  for (const auto& c : o.components) target += "&component=" + http::EncodeQueryValue(c);
  for (const auto& out : o.outputs) target += "&output=" + http::EncodeQueryValue(out);
  if (!o.topic.empty()) target += "&topic=" + http::EncodeQueryValue(o.topic);
  return target;
}

// Copies the complete lines of `pending` to stdout (blank ones, the stream's heartbeats, left
// out) and counts the events among them. False when stdout is closed (a pager quit).
bool CopyLines(std::string& pending, uint64_t* events, uint64_t limit) {
  size_t start = 0;
  for (size_t nl; (nl = pending.find('\n', start)) != std::string::npos; start = nl + 1) {
    if (nl == start) continue;
    if (limit != 0 && *events >= limit) break;
    const std::string_view line(pending.data() + start, nl + 1 - start);
    if (std::fwrite(line.data(), 1, line.size(), stdout) != line.size()) return false;
    if (line.find("\"event\":") != std::string_view::npos) ++*events;
  }
  pending.erase(0, start);
  return std::fflush(stdout) == 0;
}

}  // namespace

int Tap(const TapOptions& o) {
  std::signal(SIGPIPE, SIG_IGN);
  auto url = http::ParseUrl(o.url);
  if (!url) {
    std::cerr << "--url: " << url.error().message() << "\n";
    return kExitConfig;
  }
  if (url->tls) {
    std::cerr << "--url: the metrics listener speaks plain HTTP; use http://\n";
    return kExitConfig;
  }
  std::string token = o.token;
  if (const char* env = std::getenv("SEEDANCE_TOKEN"); token.empty() && env != nullptr) {
    token = env;
  }
  asio::io_context io;
  beast::tcp_stream stream(io);
  beast::error_code ec;
  asio::ip::tcp::resolver resolver(io);
  auto endpoints = resolver.resolve(url->host, std::to_string(url->port), ec);
  if (!ec) stream.connect(endpoints, ec);
  if (ec) {
    std::cerr << fmt::format("cannot reach {}: {}\n", o.url, ec.message());
    return kExitRuntime;
  }
  bhttp::request<bhttp::empty_body> req{bhttp::verb::get, TapTarget(*url, o), 11};
  req.set(bhttp::field::host, url->HostHeader());
  req.set(bhttp::field::user_agent, "seedance-tap");
  if (!token.empty()) req.set(bhttp::field::authorization, "Bearer " + token);
  bhttp::write(stream, req, ec);
  beast::flat_buffer buffer;
  bhttp::response_parser<bhttp::buffer_body> parser;
  // A tap streams until it ends. (Not boost::none: Boost 1.74 compares a Content-Length with
  // the empty optional as larger than it, and refuses every body.)
  parser.body_limit(std::numeric_limits<std::uint64_t>::max());
  if (!ec) bhttp::read_header(stream, buffer, parser, ec);
  if (ec) {
    std::cerr << fmt::format("{}: {}\n", o.url, ec.message());
    return kExitRuntime;
  }
  const bool ok = parser.get().result() == bhttp::status::ok;
  std::string pending;
  uint64_t events = 0;
  char chunk[64 * 1024];
  while (!parser.is_done()) {
    parser.get().body().data = chunk;
    parser.get().body().size = sizeof chunk;
    bhttp::read_some(stream, buffer, parser, ec);  // what came, not a full buffer: lines flow
    if (ec == bhttp::error::need_buffer) ec = {};
    if (ec) {
      std::cerr << fmt::format("{}: the tap ended: {}\n", o.url, ec.message());
      return kExitRuntime;
    }
    pending.append(chunk, sizeof chunk - parser.get().body().size);
    if (!ok) continue;                                          // a refusal's text, printed below
    if (!CopyLines(pending, &events, o.limit)) return kExitOk;  // stdout closed
    if (o.limit != 0 && events >= o.limit) return kExitOk;
  }
  if (!ok) {
    std::cerr << fmt::format("{}: HTTP {}: {}", o.url, parser.get().result_int(), pending);
    const auto status = parser.get().result();
    return status == bhttp::status::bad_request || status == bhttp::status::unauthorized ||
                   status == bhttp::status::forbidden
               ? kExitConfig
               : kExitRuntime;
  }
  return kExitOk;
}

}  // namespace seedance::cli
