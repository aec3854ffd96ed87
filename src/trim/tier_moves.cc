#include "trim/tier_moves.h"

namespace seedance::trim {

double TierMoves::SecondsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

uint64_t TierMoves::EncodingFor(Tier& fast, const Tier& slow, const void* p, uint64_t size,
                                BufferCodec codec) {
  if (codec == BufferCodec::kNone || !fast.RunsZeroBlockCodec(slow)) return 0;
  const bool always = codec == BufferCodec::kZeroBlocksAlways;
  if (!always && !rates_.MightPay(size)) {
    ++counters_.codec_declined;
    return 0;
  }
  const auto start = std::chrono::steady_clock::now();
  auto encoded = fast.ZeroBlockEncodedSize(p, size);
  const double seconds = SecondsSince(start);
  counters_.codec_seconds += seconds;
  rates_.AddPass(size, seconds);
  if (!encoded || *encoded >= size || (!always && !rates_.Pays(size, *encoded))) {
    ++counters_.codec_declined;
    return 0;
  }
  return *encoded;
}

Status TierMoves::Down(Tier& fast, Tier& slow, void* dst, const void* src, uint64_t size,
                       uint64_t encoded) {
  const auto start = std::chrono::steady_clock::now();
  Status copied = encoded != 0 ? fast.EncodeTo(dst, encoded, slow, src, size)
                               : slow.CopyFrom(dst, src, size, fast, CopyUrgency::kWaited);
  Account(size, encoded, SecondsSince(start));
  return copied;
}

Status TierMoves::Up(Tier& fast, const Tier& from, void* dst, const void* src, uint64_t size,
                     uint64_t encoded) {
  const auto start = std::chrono::steady_clock::now();
  Status copied = encoded != 0 ? fast.DecodeFrom(dst, size, from, src, encoded)
                               : fast.CopyFrom(dst, src, size, from, CopyUrgency::kWaited);
  Account(size, encoded, SecondsSince(start));
  return copied;
}

void TierMoves::Account(uint64_t size, uint64_t encoded, double seconds) {
  if (encoded == 0) {
    counters_.copy_seconds += seconds;
    rates_.AddCopy(size, seconds);
  } else {
    counters_.codec_seconds += seconds;
    rates_.AddPass(size, seconds);
  }
}

void TierMoves::CountLanded(uint64_t size, uint64_t encoded) {
  if (encoded == 0) return;
  counters_.moved_encoded += size;
  counters_.codec_saved += size - encoded;
}

}  // namespace seedance::trim
