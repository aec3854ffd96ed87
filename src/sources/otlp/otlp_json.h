// OTLP/JSON (the OTLP spec's JSON Protobuf Encoding) turned into the protobuf encoding of the
// same message, so one reader (otlp_records.h) handles both. Field names lowerCamelCase or as
// in the .proto; trace_id, span_id and parent_span_id as hex (OTLP's exception to proto3
// JSON); bytes_value as base64; 64-bit integers as numbers or decimal strings; doubles as
// numbers or "NaN", "Infinity", "-Infinity"; enums as integers. Unknown fields are ignored, as
// the spec asks of receivers. Parsed with util/json_check.h's bounded parser.
#pragma once

#include <string>
#include <string_view>

#include "seedance/result.h"
#include "sources/otlp/otlp_records.h"

namespace seedance::sources {

// The protobuf bytes of the Export{Logs,Metrics,Trace}ServiceRequest `json` holds;
// kInvalidArgument with the JSON path of what is wrong.
Result<std::string> OtlpJsonToProtobuf(OtlpSignal signal, std::string_view json);

}  // namespace seedance::sources
