#include "mqtt/read_pacer.h"

namespace seedance::mqtt {

void ReadPacer::OnRead(Clock::time_point at, size_t messages) {
  if (have_last_ && at > last_read_) {
    const double seconds = std::chrono::duration<double>(at - last_read_).count();
    const double sample = static_cast<double>(messages) / seconds;
    // A quarter of each new sample: a few reads follow a change of rate, one odd gap does not
    // undo the estimate.
    rate_ = rate_ == 0 ? sample : rate_ + (sample - rate_) / 4;
  }
  last_read_ = at;
  have_last_ = true;
}

std::chrono::microseconds ReadPacer::Linger() const {
  if (rate_ <= 0) return max_linger_;
  const double us = static_cast<double>(kBatch) * 1e6 / rate_;
  if (us >= static_cast<double>(max_linger_.count())) return max_linger_;
  if (us <= static_cast<double>(min_linger_.count())) return min_linger_;
  return std::chrono::microseconds(static_cast<int64_t>(us));
}

}  // namespace seedance::mqtt
