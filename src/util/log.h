// Leveled, line-oriented logging to stderr, with a limiter against log storms.
//
// Why not spdlog: we need one line per event of interest, a global level and a per-key rate
// limit; that is ~100 lines on top of fmt, while spdlog would add its own sink/thread
// machinery and a second fmt copy to a binary whose size we budget.
// Thread-safe: each line is written with one write(2).
#pragma once

#include <fmt/format.h>

#include <atomic>
#include <cstddef>
#include <string_view>

#include "util/log_limiter.h"  // every caller of the log macros may need one

namespace seedance::util {

enum class LogLevel : int { kDebug = 0, kInfo = 1, kWarn = 2, kError = 3, kOff = 4 };

// Parses "debug", "info", "warn", "error", "off". Returns false on anything else.
bool ParseLogLevel(std::string_view text, LogLevel* level);
void SetLogLevel(LogLevel level);
LogLevel GetLogLevel();
inline bool LogEnabled(LogLevel level) { return level >= GetLogLevel(); }

// The longest message one log line carries; the rest is cut with "... (N more bytes)".
inline constexpr size_t kMaxLogMessageBytes = 4096;

// Writes one line: "<UTC time> <LEVEL> [<component>] <message>". The message and component
// may hold text from outside (scripts, brokers, servers): control characters are escaped
// (a newline becomes \n, ESC \x1b) so no text forges a line, and the message is cut at
// kMaxLogMessageBytes.
void LogLine(LogLevel level, std::string_view component, std::string_view message);

template <typename... Args>
void Log(LogLevel level, std::string_view component, fmt::format_string<Args...> f,
         Args&&... args) {
  if (!LogEnabled(level)) return;
  LogLine(level, component, fmt::format(f, std::forward<Args>(args)...));
}

}  // namespace seedance::util

#define SEEDANCE_LOG_DEBUG(component, ...) \
  ::seedance::util::Log(::seedance::util::LogLevel::kDebug, component, __VA_ARGS__)
#define SEEDANCE_LOG_INFO(component, ...) \
  ::seedance::util::Log(::seedance::util::LogLevel::kInfo, component, __VA_ARGS__)
#define SEEDANCE_LOG_WARN(component, ...) \
  ::seedance::util::Log(::seedance::util::LogLevel::kWarn, component, __VA_ARGS__)
#define SEEDANCE_LOG_ERROR(component, ...) \
  ::seedance::util::Log(::seedance::util::LogLevel::kError, component, __VA_ARGS__)
