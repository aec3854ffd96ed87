#include "bench/delivery_recorder.h"

#include <algorithm>

namespace seedance::bench {

void DeliveryRecorder::Record(const Stamp& stamp, int64_t received_ns) {
  constexpr uint64_t kMaxSeq = 1ull << 32;  // far beyond any bench run; guards bad input
  if (stamp.seq >= kMaxSeq) return;
  std::lock_guard<std::mutex> lock(mu_);
  if (stamp.seq >= seen_.size()) seen_.resize(std::max<size_t>(stamp.seq + 1, seen_.size() * 2));
  if (seen_[stamp.seq]) {
    ++duplicates_;
    return;
  }
  seen_[stamp.seq] = true;
  ++unique_;
  last_received_ns_ = std::max(last_received_ns_, received_ns);
  if (first_sent_ns_ == 0 || stamp.sent_ns < first_sent_ns_) first_sent_ns_ = stamp.sent_ns;
  const double ms = static_cast<double>(received_ns - stamp.sent_ns) / 1e6;
  all_ms_.push_back(ms);
  interval_ms_.push_back(ms);
}

uint64_t DeliveryRecorder::unique() const {
  std::lock_guard<std::mutex> lock(mu_);
  return unique_;
}

uint64_t DeliveryRecorder::duplicates() const {
  std::lock_guard<std::mutex> lock(mu_);
  return duplicates_;
}

int64_t DeliveryRecorder::last_received_ns() const {
  std::lock_guard<std::mutex> lock(mu_);
  return last_received_ns_;
}

int64_t DeliveryRecorder::first_sent_ns() const {
  std::lock_guard<std::mutex> lock(mu_);
  return first_sent_ns_;
}

std::vector<double> DeliveryRecorder::TakeInterval() {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<double> out;
  out.swap(interval_ms_);
  return out;
}

std::vector<double> DeliveryRecorder::AllLatenciesMs() const {
  std::lock_guard<std::mutex> lock(mu_);
  return all_ms_;
}

}  // namespace seedance::bench
