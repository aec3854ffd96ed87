// The tests file of `seedance test`: what goes into a chain of processors, how time moves, and
// what must come out. The format, with an example, is in docs/operations.md.
//
//   tests:
//     - name: keeps -40, the lower bound
//       processors: [filter]             # a chain, by name; default: every processor, in order
//       clock: 2026-01-01T00:00:00Z      # the fake clock's start (default: this time)
//       input:
//         - payload: {temperature: -40}  # a map: JSON; a string: the payload's bytes as given
//           topic: sensors/a             # default "test"
//           time: 2026-01-01T00:00:05Z   # event time (default: the clock)
//           headers: {site: a}
//         - advance: 10s                 # the clock moves on; every processor ticks (<= 168h)
//         - watermark: 2026-01-01T00:01:00Z   # event time reaches this (the chain's head)
//       expect:                          # every event that came out, in order; or `dropped`
//         - payload: {temperature: -40}  # equal as JSON (`match: subset`: these fields only)
//         - output: stale                # main (default), error, stale or a named output
//           reason: later than           # the reason contains this
//           where: {count: {">=": 3}}    # field conditions: == != < <= > >= exists
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "seedance/event.h"
#include "seedance/result.h"
#include "seedance/status.h"

namespace seedance::pipetest {

struct Step {
  enum class Kind { kEvent, kAdvance, kWatermark };
  Kind kind = Kind::kEvent;
  // kEvent
  std::string topic = "test";
  std::optional<int64_t> time_ns;  // none: the clock's time
  std::string payload;
  PayloadFormat format = PayloadFormat::kJson;
  std::vector<Header> headers;
  // kAdvance: nanoseconds; kWatermark: the event time reached (Unix ns)
  int64_t ns = 0;
};

struct Condition {
  std::string path;  // dotted, into the payload
  std::string op;    // == != < <= > >= exists
  std::string json;  // the operand as JSON (exists: true or false)
};

struct Expected {
  std::string output = "main";
  std::optional<std::string> payload;  // JSON text (or the raw bytes when not JSON)
  bool subset = false;                 // the payload's fields include these (objects)
  std::vector<Condition> where;
  std::optional<std::string> reason;  // contained in the event's reason
  std::optional<std::string> topic;
  std::string location;  // file:line of the item
};

struct TestCase {
  std::string name;
  std::string location;                 // file:line
  std::vector<std::string> processors;  // empty: all
  int64_t clock_ns = 0;
  std::vector<Step> steps;
  std::vector<Expected> expect;  // empty: nothing comes out (`dropped`)
};

// The default clock start: 2026-01-01T00:00:00Z.
inline constexpr int64_t kDefaultClockNs = 1'767'225'600'000'000'000;

// Reads a tests file. kInvalidArgument naming file:line and what is wrong (every problem,
// one per line); kNotFound when there is no file.
Result<std::vector<TestCase>> LoadTests(const std::string& path);
Result<std::vector<TestCase>> ParseTests(const std::string& text, const std::string& file);

}  // namespace seedance::pipetest
