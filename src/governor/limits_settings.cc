#include "governor/limits_settings.h"

#include <fmt/format.h>

namespace seedance::governor {
namespace {

std::function<Status(const ParamValue&)> Ratio() {
  return [](const ParamValue& v) {
    double d = std::get<double>(v);
    if (d > 0 && d <= 1) return Status::Ok();
    return InvalidArgumentError(fmt::format("expected a share above 0 and at most 1, got {}", d));
  };
}

}  // namespace

const Options<LimitsSettings>& LimitsSchema() {
  using S = LimitsSettings;
  using P = trim::PolicyOptions;
  static const Options<S> o = [] {
    const P d;
    Options<P> policy;
    policy
        .Add(&P::occupancy_trigger, {.name = "occupancy",
                                     .doc = "trim when the budget is this full ...",
                                     .default_value = fmt::format("{}", d.occupancy_trigger),
                                     .validator = Ratio()})
        .Int(&P::occupancy_samples, {.name = "occupancy_samples",
                                     .doc = "... for this many consecutive steps",
                                     .default_value = std::to_string(d.occupancy_samples),
                                     .validator = IntInRange(1)})
        .Add(&P::idle_share_trigger,
             {.name = "idle_share",
              .doc = "trim when more than this share of the budgeted bytes is idle ...",
              .default_value = fmt::format("{}", d.idle_share_trigger),
              .validator = Ratio()})
        .Int(&P::idle_steps, {.name = "idle_steps",
                              .doc = "... for at least this many steps",
                              .default_value = std::to_string(d.idle_steps),
                              .validator = IntInRange(1)})
        .Add(&P::low_watermark, {.name = "low_watermark",
                                 .doc = "a trim frees memory until the budget is under this share",
                                 .default_value = fmt::format("{}", d.low_watermark),
                                 .validator = Ratio()});
    return Options<S>()
        .Size(&S::memory, {.name = "memory",
                           .doc = "memory budget of queued events and batches, e.g. 16MiB (0 = "
                                  "none); needs queue.buffer: disk",
                           .default_value = "0"})
        .Add(&S::step, {.name = "step",
                        .doc = "how often the governor samples its triggers",
                        .default_value = "100ms"})
        .Include(&S::policy, policy);
  }();
  return o;
}

}  // namespace seedance::governor
