// MqttPublisher: the load generator of `seedance bench` (and bench/mqtt_load). Publishes
// generated payloads to a broker over a blocking socket with Seedance's own codec, at a fixed
// rate or as fast as a window of unacknowledged QoS 1 messages allows.
//
// Thread-compatible: Run() on one thread; published()/acked() may be read from any thread.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "seedance/result.h"

namespace seedance::bench {

struct PublisherOptions {
  std::string host = "127.0.0.1";
  std::string port = "1883";
  std::optional<std::string> username;
  std::optional<std::string> password;
  std::string topic;
  int qos = 1;                           // 0 or 1
  double rate = 0;                       // messages per second; 0 = as fast as the window allows
  uint32_t window = 1000;                // QoS 1 messages published but not yet acknowledged
  uint64_t count = 0;                    // stop after this many; 0 = no count limit
  std::chrono::nanoseconds duration{0};  // stop after this long; 0 = no time limit
  // Payload of message `seq` (0-based), published at Unix time `now_ns`.
  std::function<std::string(uint64_t seq, int64_t now_ns)> make_payload;
};

class MqttPublisher {
 public:
  // Connects and waits for CONNACK (5 s at most). kUnavailable when the broker cannot be
  // reached or refuses the connection.
  static Result<std::unique_ptr<MqttPublisher>> Connect(PublisherOptions options);
  ~MqttPublisher();

  // Publishes until the count or duration is reached or `stop` turns true, then waits up to
  // 10 s for outstanding acknowledgements. Returns the messages published and (QoS 1)
  // acknowledged, or kUnavailable when the connection failed.
  Result<uint64_t> Run(const std::atomic<bool>& stop);

  uint64_t published() const { return published_.load(std::memory_order_relaxed); }
  uint64_t acked() const { return acked_.load(std::memory_order_relaxed); }

 private:
  struct Socket;
  explicit MqttPublisher(PublisherOptions options);
  void ReadLoop();

  PublisherOptions options_;
  std::unique_ptr<Socket> socket_;
  std::atomic<uint64_t> published_{0};
  std::atomic<uint64_t> acked_{0};
  std::atomic<bool> connected_{false};
  std::atomic<bool> failed_{false};
};

}  // namespace seedance::bench
