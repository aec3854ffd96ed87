#include "trim/codec_rates.h"

#include <algorithm>

#include "trim/zero_block_codec.h"

namespace seedance::trim {

void CodecRates::AddCopy(uint64_t bytes, double seconds) {
  copy_bytes_ += bytes;
  copy_seconds_ += std::max(seconds, 0.0);
}

void CodecRates::AddPass(uint64_t bytes, double seconds) {
  pass_bytes_ += bytes;
  pass_seconds_ += std::max(seconds, 0.0);
}

double CodecRates::link_rate() const {
  return copy_seconds_ > 0 ? static_cast<double>(copy_bytes_) / copy_seconds_ : 0.0;
}

double CodecRates::codec_rate() const {
  return pass_seconds_ > 0 ? static_cast<double>(pass_bytes_) / pass_seconds_ : 0.0;
}

bool CodecRates::MightPay(uint64_t size) const {
  if (link_rate() <= 0) return false;
  if (codec_rate() <= 0) return true;  // the sizing pass measures it
  return CodecPays(size, 1.0, link_rate(), codec_rate());
}

bool CodecRates::Pays(uint64_t size, uint64_t encoded) const {
  if (size == 0 || encoded >= size) return false;
  const uint64_t overhead = kZeroBlockHeaderSize + ZeroBlockBitmapBytes(size);
  const uint64_t payload = encoded > overhead ? encoded - overhead : 0;
  const double zero_fraction = 1.0 - static_cast<double>(payload) / static_cast<double>(size);
  return CodecPays(size, zero_fraction, link_rate(), codec_rate());
}

}  // namespace seedance::trim
