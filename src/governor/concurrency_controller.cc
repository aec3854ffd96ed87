#include "governor/concurrency_controller.h"

#include <algorithm>
#include <utility>
#include <vector>

namespace seedance::governor {

ConcurrencyController::ConcurrencyController(ConcurrencyOptions options)
    : options_(options),
      limit_(std::clamp(options.initial, std::max(1, options.min),
                        std::max(options.min, options.max))) {}

void ConcurrencyController::RecordLatency(std::chrono::nanoseconds latency, int64_t now_ns,
                                          int in_flight) {
  if (!options_.adaptive) return;
  samples_.push_back(Sample{now_ns, latency.count(), in_flight});
}

bool ConcurrencyController::Update(int64_t now_ns) {
  if (!options_.adaptive) return false;
  if (last_update_ns_ != 0 && now_ns - last_update_ns_ < options_.interval.count()) return false;
  last_update_ns_ = now_ns;
  const int64_t from = now_ns - options_.window.count();
  while (!samples_.empty() && samples_.front().at_ns < from) samples_.pop_front();
  max_throughput_ *= 0.99;  // forget an old maximum slowly, so capacity changes are re-learned
  const bool backpressure = std::exchange(backpressure_, false);
  if (backpressure && options_.algorithm == ConcurrencyOptions::Algorithm::kHeadroom) {
    limit_ = std::max(options_.min, limit_ / 2);
  }
  if (samples_.empty()) {
    p99_s_ = 0;
    throughput_ = 0;
    return true;
  }
  std::vector<int64_t> lat;
  lat.reserve(samples_.size());
  int most_in_flight = 0;
  for (const Sample& s : samples_) {
    lat.push_back(s.latency_ns);
    most_in_flight = std::max(most_in_flight, s.in_flight);
  }
  size_t k = (lat.size() * 99 + 99) / 100 - 1;  // nearest-rank P99
  std::nth_element(lat.begin(), lat.begin() + static_cast<long>(k), lat.end());
  p99_s_ = static_cast<double>(lat[k]) / 1e9;
  throughput_ =
      static_cast<double>(samples_.size()) / (static_cast<double>(options_.window.count()) / 1e9);
  max_throughput_ = std::max(max_throughput_, throughput_);
  const auto target = static_cast<double>(options_.target_p99.count());
  const auto p99 = static_cast<double>(lat[k]);
  if (options_.algorithm == ConcurrencyOptions::Algorithm::kArticle) {
    if (p99 > target) {
      limit_ = std::max(options_.min, limit_ / 2);
    } else if (throughput_ >= 0.9 * max_throughput_) {
      limit_ = std::min(options_.max, limit_ + 1);
    }
    return true;
  }
  if (backpressure) return true;  // already halved
  if (p99 > target) {
    int reduced = static_cast<int>(limit_ * std::max(0.5, target / p99));
    limit_ = std::max(options_.min, std::min(reduced, limit_ - 1));
  } else if (p99 <= options_.headroom * target && most_in_flight >= limit_) {
    limit_ = std::min(options_.max, limit_ + 1);
  }
  return true;
}

}  // namespace seedance::governor
