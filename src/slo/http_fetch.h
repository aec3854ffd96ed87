// A minimal blocking HTTP/1.1 client for slo-check: scrape a /metrics endpoint, push to a
// Pushgateway. Plain http only; every socket operation times out.
#pragma once

#include <chrono>
#include <string>

#include "seedance/result.h"

namespace seedance::slo {

struct HttpReply {
  int status = 0;
  std::string body;
};

// `method` is GET, PUT or POST. kInvalidArgument for a bad or https URL; kUnavailable when
// the server cannot be reached or does not answer in time.
Result<HttpReply> HttpRequest(const std::string& method, const std::string& url,
                              const std::string& body = "",
                              const std::string& content_type = "text/plain",
                              std::chrono::milliseconds timeout = std::chrono::seconds(10));

}  // namespace seedance::slo
