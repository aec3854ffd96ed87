// CodecRates: whether a buffer crosses to a slower tier through the zero-block codec
// (BufferCodec::kZeroBlocks), decided from what the TierManager measured: the link's rate from
// its plain copies and the codec's from its passes (sizing, encoding, decoding; each reads the
// buffer once). CodecPays (trim/zero_block_codec.h) compares the two times. Nothing is assumed:
// until a plain copy has measured the link, the codec is not chosen.
#pragma once

#include <cstdint>

namespace seedance::trim {

class CodecRates {
 public:
  // A plain copy of `bytes` that took `seconds`.
  void AddCopy(uint64_t bytes, double seconds);
  // A codec pass over `bytes` of a buffer that took `seconds`.
  void AddPass(uint64_t bytes, double seconds);

  // Bytes per second; 0 until measured.
  double link_rate() const;
  double codec_rate() const;

  // Whether sizing the encoding of `size` bytes is worth its pass: the link is measured and the
  // codec would pay for a buffer of zeros (or its rate is not measured yet).
  bool MightPay(uint64_t size) const;
  // Whether `size` bytes whose encoding takes `encoded` bytes cross faster through the codec.
  bool Pays(uint64_t size, uint64_t encoded) const;

 private:
  uint64_t copy_bytes_ = 0;
  double copy_seconds_ = 0;
  uint64_t pass_bytes_ = 0;
  double pass_seconds_ = 0;
};

}  // namespace seedance::trim
