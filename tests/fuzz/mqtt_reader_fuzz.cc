// Fuzz target for the MQTT packet reader: any bytes from a broker, fed in chunks as reads
// bring them (the first input byte picks the chunk size and the protocol version). The reader
// must end the stream with an error or take packets, and never hold more than the bound its
// header promises: a packet up to max_packet_size, or the head of an oversized PUBLISH
// (topic up to 64 KiB) while the rest is skipped.
//
// Built as a libFuzzer binary (mqtt_reader_fuzzer) with clang; the unit tests also drive it
// with seeded mutations of its corpus (fuzz_driver_test.cc).
#include <cstdlib>
#include <variant>

#include "fuzz/fuzz_target.h"
#include "mqtt/packet_reader.h"

SEEDANCE_FUZZ_TARGET(mqtt_reader) {
  using namespace seedance::mqtt;
  if (size == 0) return 0;
  constexpr size_t kMaxPacket = 64;
  const size_t chunk = 1 + (data[0] & 0x3f);
  const Version version = (data[0] & 0x40) != 0 ? Version::kV5 : Version::kV311;
  PacketReader reader(version, kMaxPacket);
  for (size_t at = 1; at < size; at += chunk) {
    const size_t n = std::min(chunk, size - at);
    reader.Append(reinterpret_cast<const char*>(data) + at, n);
    for (;;) {
      auto taken = reader.Next();
      if (!taken) return 0;  // not MQTT: the connection ends
      if (!*taken) break;
      if (auto* pub = std::get_if<Publish>(&reader.packet())) {
        if (pub->payload.size() > kMaxPacket) std::abort();
        // A message that can be taken has a valid topic; one that cannot says why.
        if (reader.invalid().empty() && pub->topic.empty()) std::abort();
        if (!reader.invalid().empty() && !pub->payload.empty()) std::abort();
      }
    }
    // What is left is less than one packet: within the limit, or an oversized PUBLISH's
    // fixed header and head (a 64 KiB topic at most) still arriving.
    if (reader.buffered() > 5 + 2 + 65535 + 2 + chunk) std::abort();
  }
  return 0;
}
