#include "util/units.h"

#include <cctype>
#include <cmath>
#include <cstdlib>
#include <string>

namespace seedance::util {
namespace {

// Splits "12.5ms" into 12.5 and "ms". Returns false when there is no leading number.
bool SplitNumber(std::string_view text, double* number, std::string_view* unit) {
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.front())))
    text.remove_prefix(1);
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.back())))
    text.remove_suffix(1);
  size_t i = 0;
  while (i < text.size() && (std::isdigit(static_cast<unsigned char>(text[i])) || text[i] == '.'))
    ++i;
  if (i == 0) return false;
  std::string digits(text.substr(0, i));
  char* end = nullptr;
  *number = std::strtod(digits.c_str(), &end);
  if (end != digits.c_str() + digits.size()) return false;
  std::string_view rest = text.substr(i);
  while (!rest.empty() && rest.front() == ' ') rest.remove_prefix(1);
  *unit = rest;
  return true;
}

}  // namespace

Result<std::chrono::nanoseconds> ParseDuration(std::string_view text) {
  double n = 0;
  std::string_view unit;
  auto bad = [&] {
    return InvalidArgumentError("expected a duration such as 250ms, 5s or 1m, got \"" +
                                std::string(text) + "\"");
  };
  if (!SplitNumber(text, &n, &unit)) return bad();
  double scale = 0;
  if (unit == "ns")
    scale = 1;
  else if (unit == "us")
    scale = 1e3;
  else if (unit == "ms")
    scale = 1e6;
  else if (unit == "s")
    scale = 1e9;
  else if (unit == "m" || unit == "min")
    scale = 60e9;
  else if (unit == "h")
    scale = 3600e9;
  else if (unit.empty() && n == 0)
    scale = 0;
  else
    return bad();
  // 2^63 ns is about 292 years: anything longer would wrap to a negative duration.
  const double ns = n * scale;
  if (!std::isfinite(ns) || ns >= 0x1p63) {
    return InvalidArgumentError("duration \"" + std::string(text) +
                                "\" is out of range (at most 292 years)");
  }
  return std::chrono::nanoseconds(static_cast<int64_t>(std::llround(ns)));
}

Result<uint64_t> ParseSize(std::string_view text) {
  double n = 0;
  std::string_view unit;
  auto bad = [&] {
    return InvalidArgumentError("expected a size such as 4096, 512KiB or 64MiB, got \"" +
                                std::string(text) + "\"");
  };
  if (!SplitNumber(text, &n, &unit)) return bad();
  double scale = 0;
  if (unit.empty() || unit == "B")
    scale = 1;
  else if (unit == "KB" || unit == "kB")
    scale = 1e3;
  else if (unit == "MB")
    scale = 1e6;
  else if (unit == "GB")
    scale = 1e9;
  else if (unit == "KiB")
    scale = 1024.0;
  else if (unit == "MiB")
    scale = 1024.0 * 1024;
  else if (unit == "GiB")
    scale = 1024.0 * 1024 * 1024;
  else
    return bad();
  const double bytes = n * scale;
  if (!std::isfinite(bytes) || bytes >= 0x1p64) {
    return InvalidArgumentError("size \"" + std::string(text) + "\" is out of range");
  }
  return static_cast<uint64_t>(std::round(bytes));
}

}  // namespace seedance::util
