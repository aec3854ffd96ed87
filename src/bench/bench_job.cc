#include "bench/bench_job.h"

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>

#include "mqtt/broker_uri.h"

namespace seedance::bench {
namespace {

// A key of the job's YAML as checked (T{} when absent).
template <typename T>
T Value(const Params& params, const std::string& key) {
  const ParamValue* v = params.Find(key);
  const T* t = v == nullptr ? nullptr : std::get_if<T>(v);
  return t == nullptr ? T{} : *t;
}

bool ConsumesMain(const config::ComponentConfig& sink) {
  return std::find(sink.inputs.begin(), sink.inputs.end(), Output::kMain) != sink.inputs.end();
}

// A topic name matched by `filter`: wildcards become "bench", a shared-subscription prefix
// ($share/group/) is dropped.
std::string TopicMatching(std::string filter) {
  if (filter.rfind("$share/", 0) == 0) {
    size_t slash = filter.find('/', 7);
    filter = slash == std::string::npos ? "" : filter.substr(slash + 1);
  }
  std::string out;
  size_t start = 0;
  while (true) {
    size_t end = filter.find('/', start);
    std::string level = filter.substr(start, end == std::string::npos ? end : end - start);
    out += (level == "+" || level == "#") ? "bench" : level;
    if (end == std::string::npos) return out;
    out += '/';
    start = end + 1;
  }
}

// The path part of an http(s) URL, "/" when there is none.
std::string UrlPath(const std::string& url) {
  size_t scheme = url.find("://");
  size_t path = url.find('/', scheme == std::string::npos ? 0 : scheme + 3);
  return path == std::string::npos ? "/" : url.substr(path);
}

}  // namespace

Result<std::string> StampedTemplate(const std::string& object_template) {
  size_t open = object_template.find_first_not_of(" \t\r\n");
  if (open == std::string::npos || object_template[open] != '{') {
    return Status(StatusCode::kInvalidArgument,
                  "the bench payload must be a JSON object, got: " + object_template);
  }
  size_t next = object_template.find_first_not_of(" \t\r\n", open + 1);
  const bool empty = next != std::string::npos && object_template[next] == '}';
  return object_template.substr(0, open + 1) + "\"bench_seq\":{n},\"bench_ns\":{now_ns}" +
         (empty ? "" : ",") + object_template.substr(open + 1);
}

Result<BenchJob> MakeBenchJob(const config::PipelineConfig& config,
                              const BenchJobOptions& options) {
  YAML::Node root;
  try {
    root = YAML::LoadFile(options.config_path);
  } catch (const YAML::Exception& e) {
    return Status(StatusCode::kInvalidArgument, options.config_path + ": " + e.what());
  }
  BenchJob job;
  std::string payload = options.payload_template;

  // Sources: the first MQTT one is fed by the bench; otherwise generate sources are.
  auto mqtt = std::find_if(config.sources.begin(), config.sources.end(),
                           [](const auto& s) { return s.type == "mqtt"; });
  if (mqtt != config.sources.end()) {
    job.mqtt = true;
    // The job's own keys, read as the YAML the bench rewrites (it is not the plugin).
    std::string uri =
        options.broker_uri.empty() ? Value<std::string>(mqtt->params, "uri") : options.broker_uri;
    SEEDANCE_ASSIGN_OR_RETURN(mqtt::BrokerAddress addr, mqtt::ParseBrokerUri(uri));
    if (addr.tls) {
      return Status(StatusCode::kInvalidArgument,
                    "bench publishes over plain TCP; give --broker tcp://HOST:PORT for a TLS job");
    }
    job.host = addr.host;
    job.port = addr.port;
    if (mqtt->params.Has("username")) job.username = Value<std::string>(mqtt->params, "username");
    if (mqtt->params.Has("password")) job.password = Value<std::string>(mqtt->params, "password");
    job.topic = TopicMatching(Value<std::vector<std::string>>(mqtt->params, "topic").front());
    job.qos = std::min<int>(1, static_cast<int>(Value<int64_t>(mqtt->params, "qos")));
    if (!options.broker_uri.empty()) {
      root["sources"][static_cast<size_t>(mqtt - config.sources.begin())]["uri"] =
          options.broker_uri;
    }
    SEEDANCE_ASSIGN_OR_RETURN(job.payload_template,
                              StampedTemplate(payload.empty() ? kDefaultBenchPayload : payload));
  } else {
    int generators = 0;
    for (size_t i = 0; i < config.sources.size(); ++i) {
      if (config.sources[i].type != "generate") continue;
      ++generators;
      const std::string own = Value<std::string>(config.sources[i].params, "payload");
      SEEDANCE_ASSIGN_OR_RETURN(std::string stamped,
                                StampedTemplate(payload.empty() ? own : payload));
      YAML::Node node = root["sources"][i];
      node["payload"] = stamped;
      node["count"] = options.count;
      node["rate"] = options.rate;
      node["delay"] = fmt::format("{}ms", options.generator_delay.count() / 1'000'000);
      node["format"] = "json";
    }
    if (generators != 1) {
      return Status(StatusCode::kInvalidArgument,
                    generators == 0
                        ? "bench needs an mqtt source (fed through its broker) or a generate source"
                        : "bench drives one generate source; this job has several");
    }
  }

  // Sinks.
  for (size_t i = 0; i < config.sinks.size(); ++i) {
    const auto& sink = config.sinks[i];
    YAML::Node node = root["sinks"][i];
    if (sink.type == "http") {
      if (ConsumesMain(sink)) {
        node["endpoint"] =
            options.receiver_url + UrlPath(Value<std::string>(sink.params, "endpoint"));
        node.remove("tls");
        ++job.http_sinks;
      } else {
        // Side outputs go nowhere measurable; keep them off the network.
        node["endpoint"] = options.receiver_url + "/side-output";
      }
    } else if (sink.type == "file") {
      std::string path = fmt::format("{}/sink-{}.ndjson", options.workdir, i);
      node["path"] = path;
      node["max_size"] = "0";
      if (ConsumesMain(sink)) job.tail_files.push_back(path);
    } else if (ConsumesMain(sink)) {
      return Status(StatusCode::kInvalidArgument,
                    fmt::format("{}: bench reads what http and file sinks deliver; sink \"{}\" is "
                                "{}",
                                sink.location, sink.name, sink.type));
    }
  }
  if (job.http_sinks == 0 && job.tail_files.empty()) {
    return Status(StatusCode::kInvalidArgument,
                  "bench needs an http or file sink on the main output to measure deliveries");
  }
  root["queue"]["data_dir"] = options.workdir + "/data";
  if (root["metrics"]) root.remove("metrics");
  YAML::Emitter out;
  out << root;
  job.yaml = std::string(out.c_str()) + "\n";
  return job;
}

}  // namespace seedance::bench
