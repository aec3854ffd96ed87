#include "util/random_seed.h"

#include <sys/random.h>

#include <atomic>
#include <chrono>

namespace seedance::util {

uint32_t RandomSeed() {
  uint32_t seed = 0;
  if (::getrandom(&seed, sizeof seed, GRND_NONBLOCK) == static_cast<ssize_t>(sizeof seed)) {
    return seed;
  }
  // No entropy yet (early boot) or no getrandom: jitter only needs seeds that differ between
  // processes and generators.
  static std::atomic<uint32_t> counter{0};
  const auto now =
      static_cast<uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count());
  return static_cast<uint32_t>(now ^ (now >> 32)) ^ (counter.fetch_add(1) * 0x9E3779B9u);
}

}  // namespace seedance::util
