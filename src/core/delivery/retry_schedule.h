// RetrySchedule: when a part of a batch that failed is sent again, or that it is given up.
// Pure: attempts, backoff, the remote side's Retry-After and the policy in; a delay or a
// give-up out. The randomness (jitter) comes from the caller's generator, so a test fixes it.
//
// The delay after a failure is the larger of
//   - the backoff with jitter: uniform in [backoff / 2, backoff]; the backoff starts at
//     retry_initial and doubles after each failure up to retry_max;
//   - the remote side's Retry-After, capped at retry_max.
// With retry_limit > 0, the failure after retry_limit attempts gives the part up.
#pragma once

#include <chrono>
#include <cstdint>
#include <random>
#include <string>

#include "seedance/delivery_policy.h"

namespace seedance::delivery {

class RetrySchedule {
 public:
  // One part's retries so far.
  struct State {
    int64_t attempts = 0;  // failed attempts
    std::chrono::milliseconds backoff{0};
  };
  struct Decision {
    bool give_up = false;
    std::chrono::milliseconds delay{0};  // when not given up
    std::string reason;                  // when given up: "gave up after N attempts: ..."
  };

  explicit RetrySchedule(const DeliveryPolicy& policy)
      : initial_(policy.retry_initial), max_(policy.retry_max), limit_(policy.retry_limit) {}

  State First() const { return State{0, initial_}; }
  // After a failed attempt of the part in `state` (updated) for `reason`.
  Decision AfterFailure(State& state, const std::string& reason,
                        std::chrono::milliseconds retry_after, std::mt19937& rng) const;

 private:
  std::chrono::milliseconds initial_, max_;
  int64_t limit_;
};

}  // namespace seedance::delivery
