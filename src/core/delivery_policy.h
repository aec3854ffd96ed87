// DeliveryPolicy: how the sink runner delivers to one sink — batch size, concurrency, the
// timeout of an attempt, retries. Declared once for every sink (the parameters below are
// appended to each sink type's schema by the plugin registry, as its SinkDeliveryTraits say),
// so a new sink gets them, their validation and their docs without code of its own.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "governor/concurrency_controller.h"
#include "seedance/options.h"
#include "seedance/plugin_registry.h"
#include "seedance/result.h"

namespace seedance {

struct DeliveryPolicy {
  size_t batch_events = 500;
  // A batch smaller than batch_events waits until its oldest event has waited this long for
  // more (one request carries what arrives meanwhile); 0: it leaves at once.
  std::chrono::microseconds linger{0};
  // One attempt at a time unless the sink offers `concurrency`.
  governor::ConcurrencyOptions concurrency{.adaptive = false, .initial = 1, .min = 1, .max = 1};
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
