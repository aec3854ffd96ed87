// TierMoves: the bytes of TierManager's moves. TierManager decides what moves where; this
// copies it: plainly, or as its zero-block encoding where the buffer's codec asks for it and it
// pays (trim/codec_rates.h), timing each move and learning the link's and the codec's rates
// from them. The faster tier of a pair runs the codec (Tier::RunsZeroBlockCodec).
#pragma once

#include <chrono>
#include <cstdint>

#include "seedance/trim.h"
#include "trim/codec_rates.h"

namespace seedance::trim {

struct MoveCounters {
  double copy_seconds = 0;      // plain copies
  double codec_seconds = 0;     // encoded moves and sizing passes
  uint64_t moved_encoded = 0;   // bytes of buffers that crossed encoded
  uint64_t codec_saved = 0;     // bytes those encodings left out
  uint64_t codec_declined = 0;  // moves a codec buffer made plainly: it would not pay
};

class TierMoves {
 public:
  // The length of the encoding `size` bytes at `p` on `fast` cross down to `slow` as, or 0 when
  // they go as they are: `codec` is kNone, the tiers do not run the codec, or the encoding
  // would not pay (kZeroBlocks) or be no smaller. Sizing costs a pass, skipped when even a
  // buffer of zeros would not pay.
  uint64_t EncodingFor(Tier& fast, const Tier& slow, const void* p, uint64_t size,
                       BufferCodec codec);
  // Copies `size` bytes at `src` on `fast` into `dst` on `slow`: plainly (`encoded` 0) or as
  // the encoding of `encoded` bytes that EncodingFor gave. Waits.
  Status Down(Tier& fast, Tier& slow, void* dst, const void* src, uint64_t size, uint64_t encoded);
  // Copies a buffer of `size` bytes at `src` on `from` (plain, or its encoding of `encoded`
  // bytes) into `dst` on `fast`. Waits.
  Status Up(Tier& fast, const Tier& from, void* dst, const void* src, uint64_t size,
            uint64_t encoded);

  // A move of `size` bytes (`encoded`: as it crossed) that took `seconds`: a plain copy
  // measures the link, an encoded one the codec. Down and Up count their own; moves made
  // elsewhere (the copy worker) are counted here.
  void Account(uint64_t size, uint64_t encoded, double seconds);
  // A move that landed: the bytes its encoding saved.
  void CountLanded(uint64_t size, uint64_t encoded);

  const CodecRates& rates() const { return rates_; }
  const MoveCounters& counters() const { return counters_; }

 private:
  static double SecondsSince(std::chrono::steady_clock::time_point start);

  CodecRates rates_;
  MoveCounters counters_;
};

}  // namespace seedance::trim
