// MQTT packet codec: bytes ↔ Packet, for protocol 3.1.1 and 5.0.
//
// Pure functions, no I/O, no allocation beyond the output values. The decoder treats its
// input as hostile: every length is checked, malformed input returns kInvalidArgument and
// never reads out of bounds (fuzzed by tests/fuzz/mqtt_codec_fuzz.cc).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "mqtt/packet.h"
#include "seedance/result.h"

namespace seedance::mqtt {

// Appends the encoding of `packet` to `out`. kInvalidArgument when it cannot be encoded in
// `version` (e.g. AUTH in 3.1.1, a string over 65535 bytes, a packet over 256 MiB).
Status Encode(const Packet& packet, Version version, std::string& out);

// Encode() for a PUBLISH, without copying its payload twice. The same bytes as Encode().
Status EncodePublish(const Publish& publish, Version version, std::string& out);

struct FrameInfo {
  uint8_t first_byte = 0;  // packet type and flags
  size_t header_size = 0;  // fixed header bytes (1 + length bytes)
  size_t remaining = 0;    // bytes after the fixed header
  size_t total() const { return header_size + remaining; }
};

// Looks at the start of `buffer`. Returns the frame when a complete packet is there, nullopt
// when more bytes are needed, kInvalidArgument for a malformed length, kResourceExhausted when
// the packet exceeds `max_packet_size`.
Result<std::optional<FrameInfo>> PeekFrame(std::string_view buffer, size_t max_packet_size);

// Reads only the fixed header at the start of `buffer`, whatever the packet's size: nullopt
// when more bytes are needed, kInvalidArgument for a malformed length. For skipping a packet
// too large to buffer.
Result<std::optional<FrameInfo>> PeekFixedHeader(std::string_view buffer);

// What a PUBLISH says before its properties and payload.
struct PublishHead {
  uint8_t qos = 0;
  uint16_t packet_id = 0;  // when qos > 0
  std::string topic;
};
// Reads the head of a PUBLISH from the first bytes of its body (`prefix`, possibly cut):
// nullopt when more bytes are needed, kInvalidArgument when malformed (QoS 3, packet id 0).
Result<std::optional<PublishHead>> PeekPublishHead(uint8_t first_byte, std::string_view prefix);

// Decodes one packet whose fixed header was `first_byte` and whose variable header and payload
// are `body`. kInvalidArgument with what is wrong for malformed packets.
Result<Packet> Decode(uint8_t first_byte, std::string_view body, Version version);

// Decodes a PUBLISH (first_byte's type must be PUBLISH) into `out`, assigning into its strings
// so their storage is reused: the hot path of a subscriber. Same checks as Decode.
Status DecodePublishInto(uint8_t first_byte, std::string_view body, Version version, Publish* out);

// Decodes exactly one whole packet (fixed header included). For tests and the fuzzer.
Result<Packet> DecodeWhole(std::string_view bytes, Version version);

}  // namespace seedance::mqtt
