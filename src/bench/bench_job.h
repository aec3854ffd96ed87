// BenchJob: a user's pipeline configuration turned into the job `seedance bench` runs.
//
// The job keeps its sources' and processors' logic; what changes is where data comes from
// and goes to:
// - MQTT source (the first one): the bench publishes stamped payloads to its broker (or to
//   --broker) on a topic its filter matches; otherwise `generate` sources get the bench's
//   count, rate and a stamped payload (the built-in generator).
// - http sinks on the main output point at the bench's receiver (same path); file sinks
//   write into the work directory, where the bench tails those on the main output.
// - The durable queue lives in the work directory; the metrics listener is turned off.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "config/config.h"
#include "seedance/result.h"

namespace seedance::bench {

struct BenchJobOptions {
  std::string config_path;
  std::string broker_uri;        // "" = the config's own broker
  std::string payload_template;  // "" = the default or the generate source's own
  std::string receiver_url;      // "http://127.0.0.1:P" of the bench's receiver
  std::string workdir;
  uint64_t count = 0;  // generator mode: events to emit (0 = no end)
  double rate = 0;     // generator mode: events per second (0 = as fast as possible)
  std::chrono::nanoseconds generator_delay{0};  // generator mode: pause before the first event
};

struct BenchJob {
  std::string yaml;  // the rewritten configuration
  bool mqtt = false;
  // MQTT mode: where and what to publish.
  std::string host;
  uint16_t port = 1883;
  std::optional<std::string> username;
  std::optional<std::string> password;
  std::string topic;
  int qos = 1;
  std::string payload_template;         // JSON object text; {n} = sequence number
  std::vector<std::string> tail_files;  // file sinks on the main output
  int http_sinks = 0;                   // http sinks on the main output
};

// The default payload: passes the reference filter (temperature within −40..125 °C).
inline constexpr const char* kDefaultBenchPayload =
    "{\"device\":\"bench-{n}\",\"temperature\":21.5}";

// Puts the bench stamp at the start of a JSON object template, as placeholders
// ({n}, {now_ns}). kInvalidArgument when the template is not a JSON object.
Result<std::string> StampedTemplate(const std::string& object_template);

// Rewrites `config` (loaded from options.config_path). kInvalidArgument when the job cannot
// be measured (no MQTT or generate source, no http or file sink on the main output, a stdout
// sink on the main output, a TLS broker).
Result<BenchJob> MakeBenchJob(const config::PipelineConfig& config, const BenchJobOptions& options);

}  // namespace seedance::bench
