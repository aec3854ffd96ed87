// PacketReader: cuts MQTT packets out of the bytes a connection reads, over a byte buffer and
// nothing else (no socket), so it is unit-tested and fuzzed on bytes
// (tests/fuzz/mqtt_reader_fuzz.cc feeds it in chunks).
//
// The broker is untrusted. A frame whose length field is malformed, or a packet that does not
// decode, is an error (the connection ends). A PUBLISH costs one message, never the connection
// or unbounded memory:
// - larger than `max_packet_size`: its head (topic, QoS, packet id) is taken and the rest is
//   skipped as it arrives, never buffered; invalid() says why;
// - undecodable with a readable head, no topic, a topic alias (none is negotiated), a topic with
//   U+0000, a wildcard or bad UTF-8: taken without its payload; invalid() says why.
// Such a message is still acknowledged by the client (else the broker redelivers it for ever).
//
// Buffers what a read brought beyond the packet being taken; a large packet's storage is
// released once it is taken. Not thread-safe (the client's io thread).
#pragma once

#include <cstddef>
#include <string>

#include "mqtt/packet.h"
#include "seedance/result.h"

namespace seedance::mqtt {

class PacketReader {
 public:
  PacketReader(Version version, size_t max_packet_size)
      : version_(version), max_packet_size_(max_packet_size) {}

  // A new connection: forgets every byte, and a skip in progress.
  void Reset();
  // Appends `n` bytes read from the connection (what is left of an oversized PUBLISH skipped).
  void Append(const char* data, size_t n);
  // Decodes the next whole packet into packet(), consuming its bytes. False when more bytes
  // are needed; an error when the stream is not MQTT.
  Result<bool> Next();

  // The packet Next() took (its storage reused by the next: move it out to keep it).
  Packet& packet() { return packet_; }
  // Why packet(), a PUBLISH, cannot be taken; empty when it can.
  const std::string& invalid() const { return invalid_; }
  // Bytes held, not yet taken.
  size_t buffered() const { return bytes_.size() - pos_; }
  // Bytes of an oversized PUBLISH still to be discarded as they arrive.
  size_t skipping() const { return skip_bytes_; }

 private:
  // Why the PUBLISH just decoded cannot be taken; empty when it can.
  static std::string CheckPublish(const Publish& p);

  const Version version_;
  const size_t max_packet_size_;
  std::string bytes_;
  size_t pos_ = 0;
  Packet packet_;
  std::string invalid_;
  size_t skip_bytes_ = 0;
};

}  // namespace seedance::mqtt
