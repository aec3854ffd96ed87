// InfluxDB line protocol: an event as one point, `measurement,tag=v field=1 time`.
//
// Escaping (InfluxDB's line protocol reference, checked against influxd 1.6): a comma or space
// in a measurement, and a comma, equals sign or space in a tag key, tag value or field key, is
// preceded by a backslash; a string field value is quoted with `"` and `\` backslashed. What
// the protocol cannot carry makes the point fail with a reason (the event goes to `rejected`):
// a line break in a measurement, tag or field key or tag value, and a name or tag value ending
// in a backslash (influxd reads `\` + the separator as an escaped separator: `invalid tag
// format`).
//
// Field values: JSON numbers are written as floats (InfluxDB's default type, so 21 and 21.5 go
// in the same field without a type conflict; as Telegraf's JSON parser does), booleans as
// booleans, strings as strings.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "seedance/event.h"
#include "seedance/result.h"
#include "sinks/common/event_template.h"

namespace seedance::sinks {

enum class Precision { kNanoseconds, kMicroseconds, kMilliseconds, kSeconds };

// The config words ("ns", "us", "ms", "s"), which are also InfluxDB's `precision` values.
std::vector<std::pair<std::string, Precision>> PrecisionChoices();
std::string_view PrecisionName(Precision p);

// Appends `s` escaped as a measurement / a tag key, tag value or field key / a string field
// value (with its quotes). The first two return false, appending nothing, for text the
// protocol cannot carry (a line break, a trailing backslash, empty).
bool AppendMeasurement(std::string& out, std::string_view s);
bool AppendKey(std::string& out, std::string_view s);
void AppendStringField(std::string& out, std::string_view s);

// How an event becomes a point.
struct PointMapping {
  EventTemplate measurement;
  std::vector<std::pair<std::string, EventTemplate>> tags;  // sorted by key (InfluxDB's order)
  // Payload fields as dotted paths; empty: every top-level number, boolean and string of the
  // payload that no tag takes its value from.
  std::vector<std::vector<std::string>> fields;
  std::vector<std::string> tag_payload_fields;  // top-level payload fields the tags read
  Precision precision = Precision::kNanoseconds;
};

// Makes a mapping from the config's text; errors name what is wrong.
Result<PointMapping> MakePointMapping(std::string_view measurement,
                                      const std::vector<std::pair<std::string, std::string>>& tags,
                                      const std::vector<std::string>& fields, Precision precision);

// Appends `event` as one line (with its '\n'): time = its event time in `precision`. A tag
// with no value for this event is left out (as Telegraf does); false with `why` set when the
// measurement cannot be filled, no field has a value, or a name or value cannot be written.
bool AppendPoint(const PointMapping& m, const Event& event, std::string& out, std::string* why);

}  // namespace seedance::sinks
