#include "sinks/common/response_policy.h"

#include <fmt/format.h>

#include <algorithm>

#include "http/retry_after.h"
#include "util/strings.h"

namespace seedance::sinks {

ResponseVerdict ClassifyResponse(unsigned code, std::string_view reason, std::string_view body,
                                 std::optional<std::string_view> retry_after_header,
                                 std::chrono::system_clock::time_point now) {
  ResponseVerdict v;
  v.backpressure = code == 429 || code == 503;
  if (code >= 200 && code < 300) return v;
  // One line, whatever the server sent (the logger and the reason header cut it again).
  std::string snippet = util::SanitizeText(body.substr(0, 200), 400);
  while (!snippet.empty() && snippet.back() == ' ') snippet.pop_back();
  v.what = fmt::format("HTTP {} {}{}{}", code, util::SanitizeText(reason, 100),
                       snippet.empty() ? "" : ": ", snippet);
  if (code == 413) {
    v.kind = ResponseVerdict::Kind::kTooLarge;
  } else if (code == 408 || code == 429 || code >= 500) {
    v.kind = ResponseVerdict::Kind::kRetry;
    if (retry_after_header) {
      if (auto wait = http::ParseRetryAfter(*retry_after_header, now)) {
        v.retry_after = *wait;
      }
    }
  } else {
    v.kind = ResponseVerdict::Kind::kRejected;
  }
  return v;
}

}  // namespace seedance::sinks
