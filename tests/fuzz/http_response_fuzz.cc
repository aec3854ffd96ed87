// Fuzz target for the HTTP sink's response handling: any bytes as what a server sends back,
// parsed with the sink's limits (Beast, 1 MiB body), interim 1xx responses skipped as the
// sink does, then classified (sinks/common/response_policy.h). The verdict's reason must be one
// line, and a Retry-After is never negative (the sink runner caps it at retry_max).
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http.hpp>

#include <chrono>
#include <cstdlib>
#include <optional>
#include <string_view>

#include "fuzz/fuzz_target.h"
#include "sinks/common/response_policy.h"

SEEDANCE_FUZZ_TARGET(http_response) {
  namespace http = boost::beast::http;
  std::string_view bytes(reinterpret_cast<const char*>(data), size);
  for (int interim = 0; interim <= 8; ++interim) {
    http::response_parser<http::string_body> parser;
    parser.body_limit(1 << 20);
    boost::beast::error_code ec;
    // As the sink reads: the header alone (not eager), its Content-Length checked against
    // the limit, then the body eagerly until done, then EOF if the bytes run out.
    for (int step = 0; step < 64 && !parser.is_header_done(); ++step) {
      const size_t used = parser.put(boost::asio::buffer(bytes.data(), bytes.size()), ec);
      bytes.remove_prefix(used);
      if (ec == http::error::need_more) ec = {};
      if (ec || used == 0) return 0;
    }
    if (!parser.is_header_done()) return 0;
    if (auto length = parser.content_length(); length && *length > (1u << 20)) return 0;
    parser.eager(true);
    for (int step = 0; step < 64 && !parser.is_done(); ++step) {
      const size_t used = parser.put(boost::asio::buffer(bytes.data(), bytes.size()), ec);
      bytes.remove_prefix(used);
      if (ec == http::error::need_more) ec = {};
      if (ec) return 0;  // refused: the sink closes the connection and retries
      if (used == 0) {
        parser.put_eof(ec);
        if (ec) return 0;
        break;
      }
    }
    if (!parser.is_done()) return 0;
    const auto& r = parser.get();
    const unsigned code = r.result_int();
    if (code >= 100 && code < 200) continue;
    std::optional<std::string_view> retry_after;
    if (auto it = r.find(http::field::retry_after); it != r.end()) {
      retry_after = std::string_view(it->value().data(), it->value().size());
    }
    auto v = seedance::sinks::ClassifyResponse(
        code, std::string_view(r.reason().data(), r.reason().size()), r.body(), retry_after,
        std::chrono::system_clock::now());
    if (v.what.find('\n') != std::string::npos || v.what.find('\r') != std::string::npos) {
      std::abort();
    }
    if (v.retry_after.count() < 0) std::abort();
    return 0;
  }
  return 0;
}
