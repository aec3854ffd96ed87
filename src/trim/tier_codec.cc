// The zero-block codec on moves between host tiers: Tier's default codec hooks (see
// seedance/trim.h), the CPU codec of trim/zero_block_codec.h reading and writing both tiers'
// memory directly. Device tiers override them (or say they do not run it).
#include <span>

#include "seedance/trim.h"
#include "trim/zero_block_codec.h"

namespace seedance::trim {
namespace {

std::span<const std::byte> Bytes(const void* p, uint64_t n) {
  return {static_cast<const std::byte*>(p), static_cast<size_t>(n)};
}
std::span<std::byte> Bytes(void* p, uint64_t n) {
  return {static_cast<std::byte*>(p), static_cast<size_t>(n)};
}

}  // namespace

bool Tier::RunsZeroBlockCodec(const Tier& slower) const {
  return memory() == MemoryKind::kHost && slower.memory() == MemoryKind::kHost;
}

Result<uint64_t> Tier::ZeroBlockEncodedSize(const void* p, uint64_t size) {
  if (memory() != MemoryKind::kHost) {
    return FailedPreconditionError(name() + ": does not run the zero-block codec");
  }
  return trim::ZeroBlockEncodedSize(Bytes(p, size));
}

Status Tier::EncodeTo(void* dst, uint64_t encoded, const Tier& slower, const void* src,
                      uint64_t size) {
  if (!RunsZeroBlockCodec(slower)) {
    return FailedPreconditionError(name() + ": does not run the zero-block codec to " +
                                   slower.name());
  }
  return ZeroBlockEncodeTo(Bytes(src, size), Bytes(dst, encoded));
}

Status Tier::DecodeFrom(void* dst, uint64_t size, const Tier& slower, const void* src,
                        uint64_t encoded) {
  if (!RunsZeroBlockCodec(slower)) {
    return FailedPreconditionError(name() + ": does not run the zero-block codec from " +
                                   slower.name());
  }
  return ZeroBlockDecode(Bytes(src, encoded), Bytes(dst, size));
}

}  // namespace seedance::trim
