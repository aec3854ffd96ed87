// Fuzz target for the server's request reading (http/request_reader.h): any bytes as what a
// client sends on one connection, read request after request (pipelined) with small limits,
// as http/server.cc reads them. A request read whole never holds a body over the limit; a
// header over its limit, or a body announced or grown over it, ends as header_limit or
// body_limit (the server's 413), never as an exception or an allocation of what was announced.
#include <utility>  // Boost 1.74's awaitable.hpp uses std::exchange without including it.

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/beast/_experimental/test/stream.hpp>

#include <cstdlib>

#include "fuzz/fuzz_target.h"
#include "http/request_reader.h"

namespace {

constexpr seedance::http::ServerLimits kLimits{.max_connections = 1,
                                               .max_connections_per_client = 1,
                                               .max_header_bytes = 1024,
                                               .max_body_bytes = 4096};

boost::asio::awaitable<void> ReadAll(boost::beast::test::stream& stream) {
  boost::beast::flat_buffer buffer(kLimits.max_header_bytes);
  for (int request = 0; request < 64; ++request) {
    seedance::http::RequestParser parser;
    bool header_ended = false;
    const auto ec = co_await seedance::http::ReadRequest(stream, buffer, parser, kLimits,
                                                         [&header_ended] { header_ended = true; });
    if (!header_ended) std::abort();
    if (ec) co_return;  // the server answers 413 (limits) or closes
    const auto& req = parser.get();
    if (req.body().size() > kLimits.max_body_bytes) std::abort();
    if (!req.keep_alive()) co_return;
  }
}

}  // namespace

SEEDANCE_FUZZ_TARGET(http_request) {
  boost::asio::io_context io;
  boost::beast::test::stream stream(io);
  boost::beast::test::stream client(io);
  stream.connect(client);
  stream.append(boost::beast::string_view(reinterpret_cast<const char*>(data), size));
  client.close();  // the bytes end: the reads see end of stream
  boost::asio::co_spawn(io, ReadAll(stream), boost::asio::detached);
  io.run();
  return 0;
}
