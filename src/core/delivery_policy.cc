#include "core/delivery_policy.h"

#include <algorithm>

namespace seedance {
namespace {

std::chrono::milliseconds Ms(std::chrono::nanoseconds d) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(d);
}

ParamSpec ConcurrencySpec(const SinkDeliveryTraits& traits) {
  const auto positive = IntInRange(1);
  return {.name = "concurrency",
          .type = ParamType::kObject,
          .doc = "attempts in flight: a number (fixed), or a section for adaptive concurrency",
          .default_value = traits.concurrency,
          .fields =
              {
                  {.name = "adaptive",
                   .type = ParamType::kBool,
                   .doc = "follow latency (see docs/http-sink.md)",
                   .default_value = "true"},
                  {.name = "target_p99",
                   .type = ParamType::kDuration,
                   .doc = "attempt latency P99 to stay under",
                   .default_value = "85ms"},
                  {.name = "initial",
                   .type = ParamType::kInt,
                   .doc = "starting limit",
                   .default_value = "4",
                   .validator = positive},
                  {.name = "min",
                   .type = ParamType::kInt,
                   .doc = "lowest limit",
                   .default_value = "1",
                   .validator = positive},
                  {.name = "max",
                   .type = ParamType::kInt,
                   .doc = "highest limit",
                   .default_value = "64",
                   .validator = positive},
                  {.name = "window",
                   .type = ParamType::kDuration,
                   .doc = "latencies considered for the P99",
                   .default_value = "100ms"},
                  {.name = "algorithm",
                   .type = ParamType::kString,
                   .doc = "headroom (default) or article (the article's rule, for comparison)",
                   .default_value = "headroom",
                   .allowed = {"headroom", "article"}},
              },
          .scalar_alternative = ParamType::kInt,
          .validator = positive};
}

}  // namespace

std::vector<ParamSpec> DeliveryParamSpecs(const SinkDeliveryTraits& traits) {
  std::vector<ParamSpec> specs;
  specs.push_back({.name = "batch_size",
                   .type = ParamType::kInt,
                   .doc = "most events per attempt",
                   .default_value = traits.batch_size,
                   .validator = IntInRange(1)});
  if (traits.concurrent) specs.push_back(ConcurrencySpec(traits));
  if (traits.timeout) {
    specs.push_back({.name = "timeout",
                     .type = ParamType::kDuration,
                     .doc = "per attempt (connect, send, answer); then it is retried",
                     .default_value = traits.default_timeout});
  }
  specs.push_back({.name = "retry_initial",
                   .type = ParamType::kDuration,
                   .doc = "first retry delay",
                   .default_value = "100ms"});
  specs.push_back({.name = "retry_max",
                   .type = ParamType::kDuration,
                   .doc = "longest retry delay, and the longest wait a server's Retry-After gets",
                   .default_value = "30s"});
  specs.push_back({.name = "retry_limit",
                   .type = ParamType::kInt,
                   .doc = "retries before a batch goes to the rejected output (0 = retry forever)",
                   .default_value = "0",
                   .validator = IntInRange(0)});
  return specs;
}

Result<DeliveryPolicy> ReadDeliveryPolicy(const Params& p, const SinkDeliveryTraits& traits) {
  DeliveryPolicy d;
  d.batch_events = static_cast<size_t>(std::max<int64_t>(1, p.GetInt("batch_size")));
  if (traits.concurrent) {
    governor::ConcurrencyOptions& c = d.concurrency;
    if (p.IsObject("concurrency")) {
      const Params& s = p.GetObject("concurrency");
      c.adaptive = s.GetBool("adaptive");
      c.target_p99 = s.GetDuration("target_p99");
      c.initial = static_cast<int>(s.GetInt("initial"));
      c.min = static_cast<int>(s.GetInt("min"));
      c.max = static_cast<int>(s.GetInt("max"));
      c.window = s.GetDuration("window");
      c.algorithm = s.GetString("algorithm") == "article"
                        ? governor::ConcurrencyOptions::Algorithm::kArticle
                        : governor::ConcurrencyOptions::Algorithm::kHeadroom;
      if (c.min > c.max) {
        return InvalidArgumentError(p.Location("concurrency") + ": concurrency.min exceeds max");
      }
    } else {
      c.adaptive = false;
      c.initial = static_cast<int>(p.GetInt("concurrency"));
      c.min = c.max = c.initial;
    }
  }
  if (traits.timeout) d.timeout = Ms(p.GetDuration("timeout"));
  d.retry_initial = std::max(std::chrono::milliseconds(1), Ms(p.GetDuration("retry_initial")));
  d.retry_max = std::max(d.retry_initial, Ms(p.GetDuration("retry_max")));
  d.retry_limit = p.GetInt("retry_limit");
  return d;
}

}  // namespace seedance
