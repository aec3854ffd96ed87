#include "util/log.h"

#include <unistd.h>

#include <ctime>

#include "util/strings.h"

namespace seedance::util {
namespace {

std::atomic<int> g_level{static_cast<int>(LogLevel::kInfo)};

std::string_view LevelName(LogLevel level) {
  switch (level) {
    case LogLevel::kDebug:
      return "DEBUG";
    case LogLevel::kInfo:
      return "INFO ";
    case LogLevel::kWarn:
      return "WARN ";
    case LogLevel::kError:
      return "ERROR";
    case LogLevel::kOff:
      return "OFF  ";
  }
  return "?";
}

}  // namespace

bool ParseLogLevel(std::string_view text, LogLevel* level) {
  if (text == "debug")
    *level = LogLevel::kDebug;
  else if (text == "info")
    *level = LogLevel::kInfo;
  else if (text == "warn" || text == "warning")
    *level = LogLevel::kWarn;
  else if (text == "error")
    *level = LogLevel::kError;
  else if (text == "off")
    *level = LogLevel::kOff;
  else
    return false;
  return true;
}

void SetLogLevel(LogLevel level) { g_level.store(static_cast<int>(level)); }
LogLevel GetLogLevel() { return static_cast<LogLevel>(g_level.load(std::memory_order_relaxed)); }

void LogLine(LogLevel level, std::string_view component, std::string_view message) {
  timespec ts{};
  clock_gettime(CLOCK_REALTIME, &ts);
  tm utc{};
  gmtime_r(&ts.tv_sec, &utc);
  char stamp[32];
  strftime(stamp, sizeof stamp, "%Y-%m-%dT%H:%M:%S", &utc);
  std::string line =
      fmt::format("{}.{:03d}Z {} [{}] {}\n", stamp, ts.tv_nsec / 1000000, LevelName(level),
                  SanitizeText(component, 128), SanitizeText(message, kMaxLogMessageBytes));
  ssize_t unused = ::write(STDERR_FILENO, line.data(), line.size());
  (void)unused;
}

}  // namespace seedance::util
