// Fuzz target for the otlp source's reading of a request body (sources/otlp/otlp_records.h,
// otlp_json.h), bytes from anyone: as protobuf for each signal, and as OTLP/JSON turned into
// protobuf. Reading ends without a crash; every event's payload is JSON that the payload
// checker takes (depth, UTF-8, numbers); no more events and refusals than records allowed.
#include <cstdlib>
#include <string>
#include <string_view>

#include "fuzz/fuzz_target.h"
#include "sources/otlp/otlp_json.h"
#include "sources/otlp/otlp_records.h"
#include "util/json_check.h"

namespace {

void Check(seedance::sources::OtlpSignal signal, std::string_view body) {
  constexpr size_t kMax = 64;
  auto batch = seedance::sources::DecodeOtlpRequest(signal, body, kMax, 1 << 20, 1);
  if (!batch) return;
  if (batch->events.size() + batch->refused.size() > kMax) std::abort();
  for (const seedance::Event& e : batch->events) {
    if (!seedance::CheckJson(e.payload).ok()) std::abort();
  }
}

}  // namespace

SEEDANCE_FUZZ_TARGET(otlp_request) {
  using seedance::sources::OtlpSignal;
  const std::string_view body(reinterpret_cast<const char*>(data), size);
  for (OtlpSignal signal : {OtlpSignal::kLogs, OtlpSignal::kMetrics, OtlpSignal::kTraces}) {
    Check(signal, body);
    auto protobuf = seedance::sources::OtlpJsonToProtobuf(signal, body);
    if (protobuf) Check(signal, *protobuf);
  }
  return 0;
}
