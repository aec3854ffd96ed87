// Fuzz target for the MQTT codec: any bytes, both protocol versions. A decoded packet must
// re-encode, and the re-encoding must decode to the same packet.
//
// Built as a libFuzzer binary (mqtt_codec_fuzzer) with clang; the unit tests also drive it
// with seeded random and mutated inputs (mqtt_codec_fuzz_driver_test.cc).
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "mqtt/codec.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
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
  return 0;
}
