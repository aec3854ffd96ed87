// ParallelCopy: the copy of a large block between tiers in host memory. Two things make it
// faster than a plain memcpy of the same block (measured on the 2-core development VM, in
// bench/run trim):
//   - several threads: one core copies at about half of the machine's memory bandwidth (7.5
//     GB/s on one core, 14 on two), so a copy the caller waits for finishes sooner with the
//     other cores' help. Not for copies that run beside the program's own work.
//   - non-temporal stores: a moved buffer is not read again soon, so its bytes go to memory
//     without passing through the cache (glibc's memcpy does so only for blocks larger than
//     3/4 of the last-level cache, 195 MiB on this machine). The copy then neither evicts the
//     program's working set nor reads each destination line first: 11 → 17.6 GB/s.
#pragma once

#include <cstdint>

namespace seedance::trim {

// Copies `size` bytes from `src` to `dst` (not overlapping) with up to `threads` threads,
// the calling one included; blocks under `min_chunk` bytes per thread are not worth a thread.
void ParallelCopy(void* dst, const void* src, uint64_t size, int threads,
                  uint64_t min_chunk = 4ull << 20);

// memcpy with non-temporal stores where the CPU has them (x86-64), memcpy elsewhere.
void StreamingCopy(void* dst, const void* src, uint64_t size);

}  // namespace seedance::trim
