#include "core/delivery/linger.h"

namespace seedance::delivery {

std::optional<Linger::Clock::time_point> Linger::HoldUntil(size_t waiting, size_t max_events,
                                                           bool urgent, Clock::time_point now) {
  if (!enabled()) return std::nullopt;
  if (waiting == 0 || waiting >= max_events || urgent) {
    waiting_since_.reset();
    return std::nullopt;
  }
  if (!waiting_since_) waiting_since_ = now;
  const Clock::time_point leave_at = *waiting_since_ + linger_;
  if (now >= leave_at) {
    waiting_since_.reset();
    return std::nullopt;
  }
  return leave_at;
}

}  // namespace seedance::delivery
