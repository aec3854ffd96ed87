// What the HTTP sink does with a final response: the whole rule in one pure function, so it
// is unit-tested and fuzzed (tests/fuzz/http_response_fuzz.cc) apart from the network code.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <string_view>

namespace seedance::sinks {

struct ResponseVerdict {
  enum class Kind {
    kDelivered,  // 2xx
    kRejected,   // other 1xx-4xx but 408/413/429: to `rejected`
    kRetry,      // 408, 429, 5xx: again after a backoff of at least `retry_after`
    kTooLarge,   // 413: the runner sends the batch as two halves (one event: rejected)
  };
  Kind kind = Kind::kDelivered;
  // "HTTP 503 Service Unavailable: <first 200 bytes of the body>", on one line.
  std::string what;
  // The server's Retry-After (seconds or HTTP-date; at most a day: the runner caps it at
  // retry_max).
  std::chrono::milliseconds retry_after{0};
  bool backpressure = false;  // 429 or 503: the server asks for less concurrency
};

ResponseVerdict ClassifyResponse(unsigned code, std::string_view reason, std::string_view body,
                                 std::optional<std::string_view> retry_after_header,
                                 std::chrono::system_clock::time_point now);

}  // namespace seedance::sinks
