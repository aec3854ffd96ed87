// CRC-32C (Castagnoli), as used by the durable queue's records, and leveldb-style masking.
//
// Uses the SSE4.2 crc32 instruction where the CPU has it (checked at run time), otherwise a
// byte-wise table (portable to ARM gateways). Masking keeps a CRC stored inside
// data from being the CRC of that data (leveldb's rationale).
#pragma once

#include <cstdint>
#include <string_view>

namespace seedance::util {

uint32_t Crc32c(std::string_view data);
// CRC of `a` followed by `b`.
uint32_t Crc32c(std::string_view a, std::string_view b);
// CRC of the 16 bytes at `a` followed by the 4 at `b` (a record header: one call, no loop).
uint32_t Crc32c16And4(const char* a, const char* b);

namespace internal {
// Running CRC state (before the final inversion) extended by `data`; both implementations
// must agree (tested).
uint32_t ExtendSoftware(uint32_t state, std::string_view data);
uint32_t ExtendHardware(uint32_t state, std::string_view data);
bool HaveHardware();
}  // namespace internal

inline uint32_t MaskCrc(uint32_t crc) { return ((crc >> 15) | (crc << 17)) + 0xa282ead8u; }
inline uint32_t UnmaskCrc(uint32_t masked) {
  uint32_t rot = masked - 0xa282ead8u;
  return (rot >> 17) | (rot << 15);
}

}  // namespace seedance::util
