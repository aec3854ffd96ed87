// DeliveryRecorder: what the receiving side of `seedance bench` saw. Counts each stamped
// event once (at-least-once delivery may repeat some), keeps end-to-end latencies of first
// deliveries, and hands out the latencies of each timeline interval.
//
// Thread-safe: receivers record from their own threads.
#pragma once

#include <cstdint>
#include <mutex>
#include <vector>

#include "bench/stamp.h"

namespace seedance::bench {

class DeliveryRecorder {
 public:
  void Record(const Stamp& stamp, int64_t received_ns);

  uint64_t unique() const;
  uint64_t duplicates() const;
  int64_t last_received_ns() const;
  // Generation time of the earliest event delivered; 0 before any.
  int64_t first_sent_ns() const;
  // Latencies (ms) of first deliveries recorded since the previous call.
  std::vector<double> TakeInterval();
  // All latencies (ms) of first deliveries.
  std::vector<double> AllLatenciesMs() const;

 private:
  mutable std::mutex mu_;
  std::vector<bool> seen_;
  uint64_t unique_ = 0;
  uint64_t duplicates_ = 0;
  int64_t last_received_ns_ = 0;
  int64_t first_sent_ns_ = 0;
  std::vector<double> all_ms_;
  std::vector<double> interval_ms_;
};

}  // namespace seedance::bench
