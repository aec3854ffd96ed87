// ReadRequest: one request off a server connection, within the server's limits: the step of
// server.cc's loop that meets untrusted bytes first, apart so it is fuzzed on any bytes
// (tests/fuzz/http_request_fuzz.cc).
//
// The header first: Beast 1.74's eager parsing (async_read of a whole message) skips the
// body_limit check on Content-Length and reserves what the client announces, so one
// "Content-Length: 66666666666666666" threw bad_alloc. The announced length is checked here,
// before any body byte is read: over `max_body_bytes` is body_limit, as is a chunked body
// that grows past it; a header over `max_header_bytes` is header_limit.
#pragma once

#include <utility>  // Boost 1.74's awaitable.hpp uses std::exchange without including it.

#include <boost/asio/awaitable.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http/error.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/string_body.hpp>

#include "http/server.h"

namespace seedance::http {

using RequestParser = boost::beast::http::request_parser<boost::beast::http::string_body>;

// Reads a request into `parser` (fresh) through `buffer` (kept between the requests of a
// connection: pipelined bytes stay in it). `header_in()` runs when the header read ends
// (whole, or failed).
template <typename Stream, typename OnHeader>
boost::asio::awaitable<boost::system::error_code> ReadRequest(Stream& stream,
                                                              boost::beast::flat_buffer& buffer,
                                                              RequestParser& parser,
                                                              const ServerLimits& limits,
                                                              OnHeader header_in) {
  namespace bhttp = boost::beast::http;
  using boost::asio::redirect_error;
  using boost::asio::use_awaitable;
  parser.header_limit(static_cast<uint32_t>(limits.max_header_bytes));
  parser.body_limit(limits.max_body_bytes);
  boost::system::error_code ec;
  co_await bhttp::async_read_header(stream, buffer, parser, redirect_error(use_awaitable, ec));
  header_in();
  if (ec) co_return ec;
  const auto length = parser.content_length();
  if (length && *length > limits.max_body_bytes) co_return bhttp::error::body_limit;
  if (!parser.is_done()) {
    co_await bhttp::async_read(stream, buffer, parser, redirect_error(use_awaitable, ec));
  }
  co_return ec;
}

}  // namespace seedance::http
