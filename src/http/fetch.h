// Fetch: one request, waited for (slo-check's scrape of /metrics and its Pushgateway push), on
// the tree's one client (client.h) and a private io_context: http and https, and a deadline on
// the whole exchange.
#pragma once

#include <chrono>
#include <string>

#include "seedance/result.h"

namespace seedance::http {

struct FetchReply {
  int status = 0;
  std::string body;
};

// `method` is GET, PUT or POST; `authorization` the Authorization header ("" = none).
// kInvalidArgument for a bad URL or method; kUnavailable when the server cannot be reached,
// does not answer within `timeout`, or answers with a body over `max_body`.
Result<FetchReply> Fetch(const std::string& method, const std::string& url,
                         const std::string& body = "",
                         const std::string& content_type = "text/plain",
                         std::chrono::milliseconds timeout = std::chrono::seconds(10),
                         uint64_t max_body = 64u << 20, const std::string& authorization = "");

}  // namespace seedance::http
