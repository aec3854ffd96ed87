// A small state (0-3) for each of the 65,536 MQTT packet ids, two bits apiece.
//
// The client keeps one per received QoS 1/2 message id (held, acknowledged by the pipeline,
// waiting for PUBREL): a byte per id was 64 KiB per table, zero-filled, so resident in every
// client from its start (two tables, 128 KiB of the reference job's 1.2 MB anonymous memory);
// two bits make it 16 KiB.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

namespace seedance::mqtt {

class PacketIdStates {
 public:
  PacketIdStates() : bytes_(65536 / 4, 0) {}

  uint8_t Get(uint16_t id) const { return (bytes_[id >> 2] >> Shift(id)) & 3u; }
  void Set(uint16_t id, uint8_t state) {
    uint8_t& b = bytes_[id >> 2];
    b = static_cast<uint8_t>((b & ~(3u << Shift(id))) | ((state & 3u) << Shift(id)));
  }
  void Clear() { std::fill(bytes_.begin(), bytes_.end(), 0); }

 private:
  static unsigned Shift(uint16_t id) { return (id & 3u) * 2; }

  std::vector<uint8_t> bytes_;
};

}  // namespace seedance::mqtt
