// Fuzz target for the protobuf wire reader (util/protobuf_reader.h) and what the otlp sink
// reads with it (sinks/otlp/otlp_request.h: an OTLP receiver's answer, untrusted). Any bytes:
// every field read lies inside the input, nested messages are read the same way (to a bounded
// depth), reading ends, and an answer's message is at most one sanitized line.
#include <cstdlib>
#include <string>
#include <string_view>

#include "fuzz/fuzz_target.h"
#include "sinks/otlp/otlp_request.h"
#include "util/protobuf_reader.h"

namespace {

void Walk(std::string_view message, int depth) {
  seedance::util::ProtobufReader r(message);
  seedance::util::ProtobufField f;
  size_t fields = 0;
  while (r.Next(&f)) {
    if (++fields > message.size()) std::abort();  // every field takes a byte at least
    if (f.wire_type == 2) {
      if (f.bytes.data() < message.data() ||
          f.bytes.data() + f.bytes.size() > message.data() + message.size()) {
        std::abort();
      }
      if (depth < 8) Walk(f.bytes, depth + 1);
    } else if (f.wire_type != 0 && f.wire_type != 1 && f.wire_type != 5) {
      std::abort();
    }
  }
}

}  // namespace

SEEDANCE_FUZZ_TARGET(protobuf_reader) {
  const std::string_view body(reinterpret_cast<const char*>(data), size);
  Walk(body, 0);
  for (bool error : {false, true}) {
    for (const char* type : {"application/x-protobuf", "application/json"}) {
      const auto a = seedance::sinks::ReadOtlpAnswer(body, type, error);
      if (a.message.size() > 1300 || a.message.find('\n') != std::string::npos) std::abort();
    }
  }
  return 0;
}
