#include "eventtime/event_time.h"

#include <fmt/format.h>

#include <cmath>
#include <cstdint>
#include <ctime>

namespace seedance::eventtime {
namespace {

bool Digits(std::string_view s, size_t pos, size_t n, int* out) {
  if (pos + n > s.size()) return false;
  int v = 0;
  for (size_t i = pos; i < pos + n; ++i) {
    if (s[i] < '0' || s[i] > '9') return false;
    v = v * 10 + (s[i] - '0');
  }
  *out = v;
  return true;
}

Status BadTime(std::string_view text, std::string_view why) {
  return Status(StatusCode::kInvalidArgument,
                fmt::format("\"{}\" is not an RFC 3339 time: {}", text.substr(0, 64), why));
}

}  // namespace

std::vector<std::pair<std::string, TimeFormat>> TimeFormatChoices() {
  return {{"auto", TimeFormat::kAuto}, {"s", TimeFormat::kSeconds},
          {"ms", TimeFormat::kMillis}, {"us", TimeFormat::kMicros},
          {"ns", TimeFormat::kNanos},  {"rfc3339", TimeFormat::kRfc3339}};
}

Result<int64_t> ParseRfc3339(std::string_view s) {
  int year, month, day, hour, minute, second;
  if (!Digits(s, 0, 4, &year) || s.size() < 20 || s[4] != '-' || !Digits(s, 5, 2, &month) ||
      s[7] != '-' || !Digits(s, 8, 2, &day) || (s[10] != 'T' && s[10] != 't' && s[10] != ' ') ||
      !Digits(s, 11, 2, &hour) || s[13] != ':' || !Digits(s, 14, 2, &minute) || s[16] != ':' ||
      !Digits(s, 17, 2, &second)) {
    return BadTime(s, "expected YYYY-MM-DDThh:mm:ss");
  }
  if (month < 1 || month > 12 || day < 1 || day > 31 || hour > 23 || minute > 59 || second > 60) {
    return BadTime(s, "a field is out of range");
  }
  size_t pos = 19;
  int64_t fraction_ns = 0;
  if (pos < s.size() && s[pos] == '.') {
    ++pos;
    int64_t scale = 100'000'000;
    size_t start = pos;
    while (pos < s.size() && s[pos] >= '0' && s[pos] <= '9') {
      fraction_ns += (s[pos] - '0') * scale;
      scale /= 10;
      ++pos;
    }
    if (pos == start) return BadTime(s, "empty fraction");
  }
  int offset_s = 0;
  if (pos < s.size() && (s[pos] == 'Z' || s[pos] == 'z')) {
    ++pos;
  } else if (pos < s.size() && (s[pos] == '+' || s[pos] == '-')) {
    int oh, om;
    if (!Digits(s, pos + 1, 2, &oh) || pos + 3 >= s.size() || s[pos + 3] != ':' ||
        !Digits(s, pos + 4, 2, &om) || oh > 23 || om > 59) {
      return BadTime(s, "bad time zone offset");
    }
    offset_s = (s[pos] == '+' ? 1 : -1) * (oh * 3600 + om * 60);
    pos += 6;
  } else {
    return BadTime(s, "missing time zone (Z or +hh:mm)");
  }
  if (pos != s.size()) return BadTime(s, "unexpected characters at the end");
  std::tm tm{};
  tm.tm_year = year - 1900;
  tm.tm_mon = month - 1;
  tm.tm_mday = day;
  tm.tm_hour = hour;
  tm.tm_min = minute;
  tm.tm_sec = second;
  const int64_t epoch = static_cast<int64_t>(timegm(&tm)) - offset_s;
  // Unix ns in an int64_t end at 2262-04-11; past it the product overflowed (undefined;
  // "9999-12-31T23:59:59Z" came out as some time in 1970-2262). Their other end, 1677, is
  // kept well away from: a watermark is an event time less durations, and must not wrap.
  constexpr int64_t kMaxSeconds = INT64_MAX / 1'000'000'000 - 1;
  constexpr int64_t kMinSeconds = -2'208'988'800;  // 1900-01-01T00:00:00Z
  if (epoch > kMaxSeconds || epoch < kMinSeconds) {
    return BadTime(s, "outside the years 1900 to 2262");
  }
  return epoch * 1'000'000'000 + fraction_ns;
}

std::string FormatRfc3339(int64_t unix_ns) {
  int64_t secs = unix_ns / 1'000'000'000;
  int64_t rem = unix_ns % 1'000'000'000;
  if (rem < 0) {
    rem += 1'000'000'000;
    --secs;
  }
  std::time_t t = static_cast<std::time_t>(secs);
  std::tm tm{};
  gmtime_r(&t, &tm);
  return fmt::format("{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.{:03}Z", tm.tm_year + 1900, tm.tm_mon + 1,
                     tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, rem / 1'000'000);
}

Result<int64_t> EventTimeFromJson(const rapidjson::Value& value, TimeFormat format) {
  if (value.IsString()) {
    if (format != TimeFormat::kAuto && format != TimeFormat::kRfc3339) {
      return Status(StatusCode::kInvalidArgument, "expected a number, got a string");
    }
    return ParseRfc3339(std::string_view(value.GetString(), value.GetStringLength()));
  }
  if (!value.IsNumber()) {
    return Status(StatusCode::kInvalidArgument, "expected a number or an RFC 3339 string");
  }
  if (format == TimeFormat::kRfc3339) {
    return Status(StatusCode::kInvalidArgument, "expected an RFC 3339 string, got a number");
  }
  const double v = value.GetDouble();
  if (!std::isfinite(v) || v < 0) {
    return Status(StatusCode::kInvalidArgument, "expected a non-negative epoch time");
  }
  if (format == TimeFormat::kAuto) {
    format = v < 1e11   ? TimeFormat::kSeconds
             : v < 1e14 ? TimeFormat::kMillis
             : v < 1e17 ? TimeFormat::kMicros
                        : TimeFormat::kNanos;
  }
  if (format == TimeFormat::kNanos && value.IsInt64()) return value.GetInt64();
  if (format == TimeFormat::kNanos && value.IsUint64()) {  // above INT64_MAX: not a time
    return Status(StatusCode::kInvalidArgument, "time beyond the year 2262");
  }
  const double scale = format == TimeFormat::kSeconds  ? 1e9
                       : format == TimeFormat::kMillis ? 1e6
                       : format == TimeFormat::kMicros ? 1e3
                                                       : 1;
  const double ns = v * scale;
  if (ns > 9.2e18) return Status(StatusCode::kInvalidArgument, "time beyond the year 2262");
  if (value.IsInt64() && scale >= 1) return value.GetInt64() * static_cast<int64_t>(scale);
  return static_cast<int64_t>(std::llround(ns));
}

const rapidjson::Value* FindField(const rapidjson::Value& root, std::string_view path) {
  const rapidjson::Value* v = &root;
  while (true) {
    if (!v->IsObject()) return nullptr;
    size_t dot = path.find('.');
    std::string_view name = path.substr(0, dot);
    auto it = v->FindMember(rapidjson::Value(
        rapidjson::StringRef(name.data(), static_cast<rapidjson::SizeType>(name.size()))));
    if (it == v->MemberEnd()) return nullptr;
    v = &it->value;
    if (dot == std::string_view::npos) return v;
    path.remove_prefix(dot + 1);
  }
}

}  // namespace seedance::eventtime
