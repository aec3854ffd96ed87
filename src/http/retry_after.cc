#include "http/retry_after.h"

#include <algorithm>
#include <charconv>
#include <ctime>
#include <string>

namespace seedance::http {

std::optional<std::chrono::milliseconds> ParseRetryAfter(
    std::string_view value, std::chrono::system_clock::time_point now) {
  while (!value.empty() && (value.front() == ' ' || value.front() == '\t')) value.remove_prefix(1);
  while (!value.empty() && (value.back() == ' ' || value.back() == '\t')) value.remove_suffix(1);
  if (value.empty()) return std::nullopt;
  // A day is more than any retry_max worth configuring: larger values saturate there.
  constexpr int64_t kSaturateSeconds = int64_t{1} << 40;
  if (value.find_first_not_of("0123456789") == std::string_view::npos) {
    uint64_t secs = 0;
    auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), secs);
    if (ec == std::errc::result_out_of_range || secs > kSaturateSeconds) secs = kSaturateSeconds;
    return std::chrono::seconds(static_cast<int64_t>(secs));
  }
  // strptime wants a NUL-terminated string; dates are short.
  if (value.size() > 64) return std::nullopt;
  const std::string text(value);
  static constexpr const char* kForms[] = {
      "%a, %d %b %Y %H:%M:%S GMT",  // IMF-fixdate
      "%A, %d-%b-%y %H:%M:%S GMT",  // RFC 850
      "%a %b %e %H:%M:%S %Y",       // asctime
  };
  for (const char* form : kForms) {
    tm parts{};
    const char* end = strptime(text.c_str(), form, &parts);
    if (end == nullptr || *end != '\0') continue;
    const time_t at = timegm(&parts);
    if (at == static_cast<time_t>(-1)) continue;
    // In whole seconds: a date in year 9999 is past what system_clock's nanoseconds hold
    // (UBSan caught the overflow in a fuzz run).
    const int64_t delay =
        static_cast<int64_t>(at) - static_cast<int64_t>(std::chrono::system_clock::to_time_t(now));
    if (delay <= 0) return std::chrono::milliseconds(0);
    return std::chrono::seconds(std::min<int64_t>(delay, kSaturateSeconds));
  }
  return std::nullopt;
}

}  // namespace seedance::http
