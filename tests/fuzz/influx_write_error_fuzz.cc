// Fuzz target for the influxdb sink's reading of an error answer (sinks/influxdb/write_error.h):
// any bytes as the body of a 400, against a fixed set of lines that were "sent" (some of
// them holding the quote-colon sequence the parser must see past). Every line it names must
// be one of them, the count of named lines never exceeds the mentions, and the message is one
// line.
#include <cstdlib>
#include <set>
#include <string>
#include <string_view>

#include "fuzz/fuzz_target.h"

#ifdef SEEDANCE_SINK_INFLUXDB
#include "sinks/influxdb/write_error.h"

SEEDANCE_FUZZ_TARGET(influx_write_error) {
  static const std::set<std::string, std::less<>> kSent = {"m v=1 1", "m,t=a\\ b s=\"x': y\" 2",
                                                           "bad line here", "'", "': "};
  const std::string_view body(reinterpret_cast<const char*>(data), size);
  const auto e = seedance::sinks::ParseInfluxWriteError(
      body, 32, [](std::string_view l) { return kSent.find(l) != kSent.end(); });
  if (e.unparsed.size() > e.mentions) std::abort();
  for (const auto& u : e.unparsed) {
    if (kSent.find(u.line) == kSent.end()) std::abort();
  }
  if (e.message.find('\n') != std::string::npos) std::abort();
  return 0;
}
#endif  // SEEDANCE_SINK_INFLUXDB
