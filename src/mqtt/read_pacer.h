// ReadPacer: how long the MQTT client waits before its next socket read, so that a read takes
// in about kBatch messages at the rate they have been arriving, never longer than the
// configured read_linger and never shorter than kMinLinger (or read_linger if that is less).
//
// At a steady rate every read then gathers the same batch whatever the rate: at 5k msg/s the
// wait is 2.8 ms, at 2k 7 ms, at 1k msg/s 14 ms (below 930 msg/s capped by the default
// read_linger, 15 ms). The batch, not the rate, sets how often the event loop, the processing
// thread and the sink wake up: a fixed wait gathered 2 messages per wake-up at 1k msg/s and 10
// at 5k. The cost is latency at low rates, bounded by read_linger. Above 7k msg/s the wait stays
// at kMinLinger: shorter waits at a burst made more, smaller reads, and more CPU per event. A quiet
// connection takes its next message at once (the read waits for data after the linger), so a lone
// message is not delayed.
//
// The rate is an exponential moving average of messages per second between reads. Not
// thread-safe (the client's io thread only).
#pragma once

#include <algorithm>
#include <chrono>
#include <cstddef>

namespace seedance::mqtt {

class ReadPacer {
 public:
  using Clock = std::chrono::steady_clock;
  // Messages a read aims to take in. 14: below the client's kLingerMaxUnacked (20,
  // mosquitto's default QoS 1/2 in-flight window, max_inflight_messages), so the broker can
  // still send while a batch is being acknowledged. Every read costs about three
  // wake-ups (the event loop for the read and for the safe batch, the processing thread), so
  // a larger batch means fewer per event, for some latency (docs/bench.md, "Tuning record").
  static constexpr size_t kBatch = 14;
  static constexpr std::chrono::microseconds kMinLinger{2000};

  explicit ReadPacer(std::chrono::microseconds max_linger)
      : max_linger_(max_linger), min_linger_(std::min(kMinLinger, max_linger)) {}

  // A read finished at `at` and took in `messages` (they arrived since the read before it).
  void OnRead(Clock::time_point at, size_t messages);
  // How long to wait before the next read: kBatch messages at the recent rate, within
  // [kMinLinger, the configured linger] (the whole linger while the rate is unknown).
  std::chrono::microseconds Linger() const;
  double messages_per_s() const { return rate_; }

 private:
  const std::chrono::microseconds max_linger_;
  const std::chrono::microseconds min_linger_;
  Clock::time_point last_read_{};
  bool have_last_ = false;
  double rate_ = 0;  // messages per second; 0 = unknown
};

}  // namespace seedance::mqtt
