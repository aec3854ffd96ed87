// Fixed-width little-endian integers in byte strings (the durable queue's on-disk format).
// The host is checked to be little-endian (x86, ARM) at compile time, so these are copies.
#pragma once

#include <bit>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

namespace seedance::util {

static_assert(std::endian::native == std::endian::little, "big-endian hosts need byte swaps");

// Any trivially copyable value, in host (little-endian) byte order; ReadFixed consumes it from
// the front of `in` and returns false when too few bytes are left.
template <typename T>
void PutRaw(std::string& out, T v) {
  out.append(reinterpret_cast<const char*>(&v), sizeof v);
}
template <typename T>
bool ReadRaw(std::string_view& in, T* v) {
  if (in.size() < sizeof *v) return false;
  std::memcpy(v, in.data(), sizeof *v);
  in.remove_prefix(sizeof *v);
  return true;
}

inline void PutFixed16(std::string& out, uint16_t v) {
  out.append(reinterpret_cast<const char*>(&v), 2);
}
inline uint16_t GetFixed16(const char* p) {
  uint16_t v;
  std::memcpy(&v, p, 2);
  return v;
}
inline void PutFixed32(std::string& out, uint32_t v) {
  out.append(reinterpret_cast<const char*>(&v), 4);
}
inline void PutFixed64(std::string& out, uint64_t v) {
  out.append(reinterpret_cast<const char*>(&v), 8);
}
inline uint32_t GetFixed32(const char* p) {
  uint32_t v;
  std::memcpy(&v, p, 4);
  return v;
}
inline uint64_t GetFixed64(const char* p) {
  uint64_t v;
  std::memcpy(&v, p, 8);
  return v;
}

}  // namespace seedance::util
