// Reads an HTTP Retry-After value (RFC 9110 §10.2.3): delay-seconds or an HTTP-date.
#pragma once

#include <chrono>
#include <optional>
#include <string_view>

namespace seedance::http {

// The delay `value` asks for, measured from `now`: seconds ("120"), or an HTTP-date in any of
// the three forms RFC 9110 allows ("Sun, 06 Nov 1994 08:49:37 GMT", the RFC 850 and asctime
// forms). A date in the past is a delay of 0. Nothing when the value is neither. Huge values
// saturate; the caller caps the delay (the HTTP sink caps it at retry_max).
std::optional<std::chrono::milliseconds> ParseRetryAfter(std::string_view value,
                                                         std::chrono::system_clock::time_point now);

}  // namespace seedance::http
