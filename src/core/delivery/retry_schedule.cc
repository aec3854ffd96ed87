#include "core/delivery/retry_schedule.h"

#include <fmt/format.h>

#include <algorithm>

namespace seedance::delivery {

using std::chrono::milliseconds;

RetrySchedule::Decision RetrySchedule::AfterFailure(State& state, const std::string& reason,
                                                    milliseconds retry_after,
                                                    std::mt19937& rng) const {
  ++state.attempts;
  if (limit_ > 0 && state.attempts > limit_) {
    return Decision{.give_up = true,
                    .reason = fmt::format("gave up after {} attempts: {}", state.attempts, reason)};
  }
  const auto ms = state.backoff.count();
  std::uniform_int_distribution<long long> jitter(ms / 2, std::max<long long>(ms, 1));
  const milliseconds delay = std::max(std::min(retry_after, max_), milliseconds(jitter(rng)));
  state.backoff = std::min(max_, state.backoff * 2);
  return Decision{.delay = delay};
}

}  // namespace seedance::delivery
