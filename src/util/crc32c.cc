#include "util/crc32c.h"

#include <array>
#include <cstring>

#if defined(__x86_64__)
#include <cpuid.h>
#include <nmmintrin.h>
#endif

namespace seedance::util {
namespace internal {

namespace {

// Byte-wise table for the reflected Castagnoli polynomial 0x82F63B78. Written here rather than
// taken from Boost.CRC because the running state must be the plain register that the SSE4.2
// instruction also uses, so both paths can continue each other.
constexpr std::array<uint32_t, 256> MakeTable() {
  std::array<uint32_t, 256> t{};
  for (uint32_t i = 0; i < 256; ++i) {
    uint32_t c = i;
    for (int k = 0; k < 8; ++k) c = (c & 1) ? (c >> 1) ^ 0x82F63B78u : c >> 1;
    t[i] = c;
  }
  return t;
}
constexpr std::array<uint32_t, 256> kTable = MakeTable();

}  // namespace

uint32_t ExtendSoftware(uint32_t state, std::string_view data) {
  uint32_t c = state;
  for (char ch : data) c = kTable[(c ^ static_cast<uint8_t>(ch)) & 0xFF] ^ (c >> 8);
  return c;
}

#if defined(__x86_64__)
__attribute__((target("sse4.2"))) uint32_t ExtendHardware(uint32_t state, std::string_view data) {
  const char* p = data.data();
  size_t n = data.size();
  uint64_t crc = state;
  while (n >= 8) {
    uint64_t word;
    std::memcpy(&word, p, 8);
    crc = _mm_crc32_u64(crc, word);
    p += 8;
    n -= 8;
  }
  auto c = static_cast<uint32_t>(crc);
  while (n > 0) {
    c = _mm_crc32_u8(c, static_cast<uint8_t>(*p++));
    --n;
  }
  return c;
}
// One cpuid, on first use. Not __builtin_cpu_supports: it links libgcc's CPU model, whose
// constructor runs some twenty cpuid instructions at every start, each a trap to the hypervisor
// in a virtual machine (about 7 us on the development VM: 0.15 ms of start-up).
bool HaveHardware() {
  static const bool have = [] {
    unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
    return __get_cpuid(1, &eax, &ebx, &ecx, &edx) != 0 && (ecx & bit_SSE4_2) != 0;
  }();
  return have;
}
#else
uint32_t ExtendHardware(uint32_t state, std::string_view data) {
  return ExtendSoftware(state, data);
}
bool HaveHardware() { return false; }
#endif

uint32_t Extend(uint32_t state, std::string_view data) {
  return HaveHardware() ? ExtendHardware(state, data) : ExtendSoftware(state, data);
}

}  // namespace internal

uint32_t Crc32c(std::string_view data) { return ~internal::Extend(0xFFFFFFFFu, data); }

uint32_t Crc32c(std::string_view a, std::string_view b) {
  return ~internal::Extend(internal::Extend(0xFFFFFFFFu, a), b);
}

#if defined(__x86_64__)
namespace {
__attribute__((target("sse4.2"))) uint32_t HeaderHardware(const char* a, const char* b) {
  uint64_t w0, w1;
  uint32_t w2;
  std::memcpy(&w0, a, 8);
  std::memcpy(&w1, a + 8, 8);
  std::memcpy(&w2, b, 4);
  uint64_t crc = _mm_crc32_u64(0xFFFFFFFFu, w0);
  crc = _mm_crc32_u64(crc, w1);
  return ~_mm_crc32_u32(static_cast<uint32_t>(crc), w2);
}
}  // namespace
#endif

uint32_t Crc32c16And4(const char* a, const char* b) {
#if defined(__x86_64__)
  if (internal::HaveHardware()) return HeaderHardware(a, b);
#endif
  return Crc32c(std::string_view(a, 16), std::string_view(b, 4));
}

}  // namespace seedance::util
