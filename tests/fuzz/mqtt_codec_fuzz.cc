// Fuzz target for the MQTT codec: any bytes, both protocol versions. A decoded packet must
// re-encode, and the re-encoding must decode to the same packet.
//
// Built as a libFuzzer binary (mqtt_codec_fuzzer) with clang; the unit tests also drive it
// with seeded random and mutated inputs (fuzz_driver_test.cc).
#include <cstdlib>
#include <string>
#include <string_view>

#include "fuzz/fuzz_target.h"
#include "mqtt/codec.h"

SEEDANCE_FUZZ_TARGET(mqtt_codec) {
  using namespace seedance::mqtt;
  std::string_view bytes(reinterpret_cast<const char*>(data), size);
  for (Version v : {Version::kV311, Version::kV5}) {
    auto frame = PeekFrame(bytes, 1 << 20);
    if (!frame || !frame->has_value()) continue;
    const FrameInfo& f = **frame;
    auto packet = Decode(f.first_byte, bytes.substr(f.header_size, f.remaining), v);
    if (!packet) continue;
    std::string again;
    // CONNECT carries its own version; encode it in that one.
    Version ev = v;
    if (auto* c = std::get_if<Connect>(&*packet)) ev = c->version;
    if (!Encode(*packet, ev, again).ok()) continue;  // e.g. fields too long to re-encode
    auto round = DecodeWhole(again, ev);
    if (!round || !(*round == *packet)) std::abort();
  }
  // The peeks the client uses to skip oversized PUBLISH packets: bounded, never past the end.
  if (auto fixed = PeekFixedHeader(bytes); fixed && fixed->has_value()) {
    const FrameInfo& f = **fixed;
    if (f.header_size > bytes.size()) std::abort();
    auto head = PeekPublishHead(f.first_byte, bytes.substr(f.header_size));
    if (head && head->has_value() && (*head)->topic.size() > bytes.size()) std::abort();
  }
  return 0;
}
