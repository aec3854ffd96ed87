// opentelemetry.proto.common.v1, the part both OTLP writers need (the otlp sink's requests,
// the tracer's own spans): a KeyValue whose value is a string AnyValue.
#pragma once

#include <cstdint>
#include <string_view>

#include "util/protobuf_writer.h"

namespace seedance::util {

inline void AppendOtlpStringKeyValue(ProtobufWriter& w, uint32_t field, std::string_view key,
                                     std::string_view value) {
  const size_t kv = w.BeginMessage(field);
  w.Bytes(1, key);
  const size_t any = w.BeginMessage(2);
  w.Bytes(1, value);  // AnyValue.string_value
  w.EndMessage(any);
  w.EndMessage(kv);
}

}  // namespace seedance::util
