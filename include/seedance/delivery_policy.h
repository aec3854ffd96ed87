// DeliveryPolicy: how the sink runner delivers to one sink — batch size, concurrency, the
// timeout of an attempt, retries. Declared once for every sink (the parameters below are
// appended to each sink type's schema by the plugin registry, as its SinkDeliveryTraits say),
// so a new sink gets them, their validation and their docs without code of its own. Part of
// the API because the registry appends them; the runner (src/core/) and the concurrency
// controller (src/governor/) read them. Implemented in src/api/delivery_policy.cc.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "seedance/options.h"
#include "seedance/plugin_registry.h"
#include "seedance/result.h"

namespace seedance {

// How many attempts a sink may have in flight (src/governor/concurrency_controller.h says
// how the adaptive rules use these).
struct ConcurrencyOptions {
  enum class Algorithm { kHeadroom, kArticle };
  bool adaptive = false;
  Algorithm algorithm = Algorithm::kHeadroom;
  double headroom = 0.8;
  int initial = 4;
  int min = 1;
  int max = 64;
  std::chrono::nanoseconds target_p99 = std::chrono::milliseconds(85);
  std::chrono::nanoseconds window = std::chrono::milliseconds(100);
  std::chrono::nanoseconds interval = std::chrono::milliseconds(50);
};

struct DeliveryPolicy {
  size_t batch_events = 500;
  // A batch smaller than batch_events waits until its oldest event has waited this long for
  // more (one request carries what arrives meanwhile); 0: it leaves at once.
  std::chrono::microseconds linger{0};
  // One attempt at a time unless the sink offers `concurrency`.
  ConcurrencyOptions concurrency{.adaptive = false, .initial = 1, .min = 1, .max = 1};
  std::chrono::milliseconds timeout{0};  // of one attempt; 0 = none
  std::chrono::milliseconds retry_initial{100};
  std::chrono::milliseconds retry_max{30000};
  int64_t retry_limit = 0;  // attempts before a batch goes to `rejected`; 0 = for ever
};

// The delivery parameters a sink with `traits` offers, in the order `describe` shows them.
Options<DeliveryPolicy> DeliverySchema(const SinkDeliveryTraits& traits);

// The policy from a sink's checked parameters. kInvalidArgument (with the location) when the
// values contradict each other (concurrency.min above max).
Result<DeliveryPolicy> ReadDeliveryPolicy(const Params& p, const SinkDeliveryTraits& traits);

}  // namespace seedance
