// A thread per extra chunk, started per call: a start costs tens of microseconds against the
// milliseconds a chunk of 4 MiB or more takes, and no pool of idle threads is kept.
#include "governor/parallel_copy.h"

#include <algorithm>
#include <cstring>
#include <thread>
#include <vector>

namespace seedance::governor {

void ParallelCopy(void* dst, const void* src, uint64_t size, int threads, uint64_t min_chunk) {
  const uint64_t by_size = std::max<uint64_t>(1, size / std::max<uint64_t>(min_chunk, 1));
  const uint64_t n = std::min<uint64_t>(static_cast<uint64_t>(std::max(threads, 1)), by_size);
  auto* d = static_cast<char*>(dst);
  const auto* s = static_cast<const char*>(src);
  if (n == 1) {
    std::memcpy(d, s, size);
    return;
  }
  // Chunks are whole multiples of 4 KiB (the last one takes the rest).
  const uint64_t chunk = (size / n + 4095) & ~uint64_t{4095};
  std::vector<std::thread> helpers;
  helpers.reserve(n - 1);
  for (uint64_t off = chunk; off < size; off += chunk) {
    const uint64_t len = std::min(chunk, size - off);
    helpers.emplace_back([=] { std::memcpy(d + off, s + off, len); });
  }
  std::memcpy(d, s, std::min(chunk, size));
  for (auto& t : helpers) t.join();
}

}  // namespace seedance::governor
