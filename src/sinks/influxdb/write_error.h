// What InfluxDB says when it refuses points: its JSON error answer, taken apart. The rule that
// turns it into an outcome is in influxdb_sink.cc; this part is pure, unit-tested and fuzzed.
//
// influxd 1.x answers 400 with {"error":"partial write: unable to parse '<line>': <why>\n
// unable to parse '<line>': <why> dropped=N"} (every line it could not parse, quoted; N points
// refused for other reasons, e.g. a field type conflict, which it names only once); the v2 API
// answers {"code":"invalid","message":"..."} with the same text.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace seedance::sinks {

struct InfluxWriteError {
  std::string message;  // the server's words (or the body when it is not JSON), one line
  struct Unparsed {
    std::string line;  // as quoted
    std::string why;
  };
  std::vector<Unparsed> unparsed;   // every "unable to parse '<line>': <why>" whose line is known
  size_t mentions = 0;              // "unable to parse '" in the message, known lines or not
  std::optional<uint64_t> dropped;  // "dropped=N"
  bool incomplete = false;          // the answer was too costly to read whole (see below)
};

// `is_line(candidate)` says whether a quoted text is a line that was sent: a line may itself
// hold "': ", so each possible end is tried, up to `max_line_bytes` (the longest line sent).
// The answer comes from the server: at most kInfluxParseBudgetBytes of candidates are tried
// in all (a 1 MiB body of quotes would otherwise cost time quadratic in its size); past that
// the result is `incomplete`.
inline constexpr size_t kInfluxParseBudgetBytes = 8 << 20;
InfluxWriteError ParseInfluxWriteError(std::string_view body, size_t max_line_bytes,
                                       const std::function<bool(std::string_view)>& is_line);

}  // namespace seedance::sinks
