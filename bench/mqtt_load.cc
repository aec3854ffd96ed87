// mqtt_load: publishes stamped JSON readings to an MQTT broker (QoS 1) as fast as a window of
// unacknowledged messages allows, or at a fixed rate. For the Python benchmarks; the
// publisher itself is the one `seedance bench` uses (src/bench/mqtt_publisher.h).
//
//   mqtt_load HOST PORT COUNT RATE(0 = as fast as possible) [WINDOW] [PAD] [QOS]
//
// Each payload: {"id":N,"device":"dN","temperature":T,"sent_ns":UNIX_NS}, plus
// ,"pad":"xxx…" of PAD bytes when PAD > 0 (for volume tests). QOS: 1 (default) or 0. Prints one
// JSON line.
#include <fmt/format.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "bench/mqtt_publisher.h"

int main(int argc, char** argv) {
  if (argc < 5) {
    std::fprintf(stderr, "usage: mqtt_load HOST PORT COUNT RATE [WINDOW] [PAD] [QOS]\n");
    return 2;
  }
  seedance::bench::PublisherOptions o;
  o.host = argv[1];
  o.port = argv[2];
  o.count = std::strtoull(argv[3], nullptr, 10);
  o.rate = std::atof(argv[4]);
  o.window = argc > 5 ? static_cast<uint32_t>(std::atol(argv[5])) : 1000;
  const size_t pad = argc > 6 ? std::strtoull(argv[6], nullptr, 10) : 0;
  o.qos = argc > 7 ? std::atoi(argv[7]) : 1;
  // The topic changes per message here, so make_payload only builds the body; the
  // sensor/dN/temperature topics all match the reference job's sensor/+/temperature.
  o.topic = "sensor/d0/temperature";
  const std::string padding = pad > 0 ? fmt::format(",\"pad\":\"{}\"", std::string(pad, 'x')) : "";
  o.make_payload = [&padding](uint64_t i, int64_t now_ns) {
    double t = -60 + static_cast<double>(i * 7919 % 2100) / 10.0;
    return fmt::format("{{\"id\":{},\"device\":\"d{}\",\"temperature\":{},\"sent_ns\":{}{}}}", i,
                       i % 100, t, now_ns, padding);
  };
  auto publisher = seedance::bench::MqttPublisher::Connect(o);
  if (!publisher) {
    std::fprintf(stderr, "mqtt_load: %s\n", publisher.error().message().c_str());
    return 1;
  }
  std::atomic<bool> stop{false};
  const auto start = std::chrono::steady_clock::now();
  auto published = (*publisher)->Run(stop);
  if (!published) {
    std::fprintf(stderr, "mqtt_load: %s\n", published.error().message().c_str());
    return 1;
  }
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf("{\"published\": %llu, \"seconds\": %.3f, \"publish_rate\": %.0f}\n",
              static_cast<unsigned long long>(*published), secs, *published / secs);
  return 0;
}
