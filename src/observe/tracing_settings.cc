#include "observe/tracing_settings.h"

#include <fmt/format.h>

#include "http/url.h"

namespace seedance::observe {
namespace {

Status AboveZero(const ParamValue& v) {
  return std::get<std::chrono::nanoseconds>(v).count() > 0
             ? Status::Ok()
             : InvalidArgumentError("must be above 0");
}

}  // namespace

const Options<TracingSettings>& TracingSchema() {
  using S = TracingSettings;
  static const Options<S> o =
      Options<S>()
          .Add(&S::url,
               {.name = "url",
                .doc = "the OTLP/HTTP traces endpoint Seedance's own spans go to (protobuf), "
                       "e.g. http://127.0.0.1:4318/v1/traces; unset: no spans",
                .validator = [](const ParamValue& v) -> Status {
                  auto url = http::ParseUrl(std::get<std::string>(v));
                  return url ? Status::Ok() : url.error();
                }})
          .Add(&S::sample_ratio,
               {.name = "sample_ratio",
                .doc = "share of the events without a sampled traceparent that start a trace "
                       "(events whose traceparent is sampled are always traced)",
                .default_value = "0",
                .validator =
                    [](const ParamValue& v) {
                      const double d = std::get<double>(v);
                      if (d >= 0 && d <= 1) return Status::Ok();
                      return InvalidArgumentError(
                          fmt::format("expected a share from 0 to 1, got {}", d));
                    }})
          .Add(&S::service_name, {.name = "service_name",
                                  .doc = "the spans' service.name resource attribute",
                                  .default_value = "seedance"})
          .Add(&S::interval, {.name = "interval",
                              .doc = "how often finished spans are exported (and when 512 wait)",
                              .default_value = "1s",
                              .validator = AboveZero})
          .Add(&S::timeout, {.name = "timeout",
                             .doc = "how long one export may take; past it its spans are dropped",
                             .default_value = "5s",
                             .validator = AboveZero})
          .Int(&S::max_queued_spans,
               {.name = "max_queued_spans",
                .doc = "finished spans held for export; past it new spans are dropped (counted)",
                .default_value = "2048",
                .validator = IntInRange(1, 1 << 20)});
  return o;
}

}  // namespace seedance::observe
