#include "seedance/delivery_policy.h"

#include <algorithm>

namespace seedance {
namespace {

Options<ConcurrencyOptions> ConcurrencySchema() {
  using C = ConcurrencyOptions;
  const auto positive = IntInRange(1);
  return Options<C>()
      .Add(&C::adaptive, {.name = "adaptive",
                          .doc = "follow latency (see docs/http-sink.md)",
                          .default_value = "true"})
      .Add(&C::target_p99, {.name = "target_p99",
                            .doc = "attempt latency P99 to stay under",
                            .default_value = "85ms"})
      .Int(
          &C::initial,
          {.name = "initial", .doc = "starting limit", .default_value = "4", .validator = positive})
      .Int(&C::min,
           {.name = "min", .doc = "lowest limit", .default_value = "1", .validator = positive})
      .Int(&C::max,
           {.name = "max", .doc = "highest limit", .default_value = "64", .validator = positive})
      .Add(&C::window,
           {.name = "window", .doc = "latencies considered for the P99", .default_value = "100ms"})
      .Enum(&C::algorithm,
            {.name = "algorithm",
             .doc = "headroom (default) or article (the article's rule, for comparison)",
             .default_value = "headroom"},
            {{"headroom", C::Algorithm::kHeadroom}, {"article", C::Algorithm::kArticle}})
      .Check([](const C& c, const Params& p) {
        if (c.min > c.max) {
          return InvalidArgumentError(p.Location("min") + ": concurrency.min exceeds max");
        }
        return Status::Ok();
      });
}

// A fixed limit: `concurrency: 4`.
void FixedConcurrency(int64_t n, ConcurrencyOptions& c) {
  c.adaptive = false;
  c.initial = c.min = c.max = static_cast<int>(n);
}

}  // namespace

Options<DeliveryPolicy> DeliverySchema(const SinkDeliveryTraits& traits) {
  using D = DeliveryPolicy;
  Options<D> o;
  o.Int(&D::batch_events, {.name = "batch_size",
                           .doc = "most events per attempt",
                           .default_value = traits.batch_size,
                           .validator = IntInRange(1)});
  o.Add(&D::linger,
        {.name = "batch_linger",
         .doc = "a batch smaller than batch_size leaves once its oldest event has waited this "
                "long since it was taken in (0 = at once)",
         .default_value = traits.batch_linger,
         .validator = [](const ParamValue& v) {
           const auto d = std::get<std::chrono::nanoseconds>(v);
           if (d >= std::chrono::nanoseconds(0) && d <= std::chrono::seconds(10))
             return Status::Ok();
           return InvalidArgumentError("must be 0 to 10s");
         }});
  if (traits.concurrent) {
    o.Section(&D::concurrency,
              {.name = "concurrency",
               .doc = "attempts in flight: a number (fixed), or a section for adaptive concurrency",
               .default_value = traits.concurrency,
               .validator = IntInRange(1)},
              ConcurrencySchema(),
              std::function<void(int64_t, ConcurrencyOptions&)>(FixedConcurrency));
  }
  if (traits.timeout) {
    // At least 1 ms (kept in milliseconds; 0 would be none): without a deadline an attempt waits
    // for ever on a peer that takes a request and never answers (or loses the answer), and the sink
    // delivers nothing more, silently.
    o.Add(&D::timeout,
          {.name = "timeout",
           .doc = "per attempt (connect, send, answer); then it is retried",
           .default_value = traits.default_timeout,
           .validator = [](const ParamValue& v) {
             if (std::get<std::chrono::nanoseconds>(v) >= std::chrono::milliseconds(1)) {
               return Status::Ok();
             }
             return InvalidArgumentError(
                 "must be at least 1ms (an attempt without a deadline waits for "
                 "ever on a peer that never answers)");
           }});
  }
  o.Add(&D::retry_initial,
        {.name = "retry_initial", .doc = "first retry delay", .default_value = "100ms"})
      .Add(&D::retry_max,
           {.name = "retry_max",
            .doc = "longest retry delay, and the longest wait a server's Retry-After gets",
            .default_value = "30s"})
      .Int(&D::retry_limit,
           {.name = "retry_limit",
            .doc = "retries before a batch goes to the rejected output (0 = retry forever)",
            .default_value = "0",
            .validator = IntInRange(0)});
  return o;
}

Result<DeliveryPolicy> ReadDeliveryPolicy(const Params& p, const SinkDeliveryTraits& traits) {
  SEEDANCE_ASSIGN_OR_RETURN(DeliveryPolicy d, DeliverySchema(traits).Bind(p));
  d.batch_events = std::max<size_t>(1, d.batch_events);
  d.retry_initial = std::max(std::chrono::milliseconds(1), d.retry_initial);
  d.retry_max = std::max(d.retry_initial, d.retry_max);
  return d;
}

}  // namespace seedance
