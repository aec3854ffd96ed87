#include "governor/heap.h"

#include <malloc.h>
#include <unistd.h>

#include <cstdio>

namespace seedance::governor {

void FixMmapThreshold() {
  mallopt(M_MMAP_THRESHOLD, 128 * 1024);  // setting it also turns off the dynamic threshold
  mallopt(M_TRIM_THRESHOLD, 256 * 1024);
}

void TuneHeapForBudget() {
  FixMmapThreshold();
  mallopt(M_ARENA_MAX, 2);
}

uint64_t ResidentBytes() {
  std::FILE* f = std::fopen("/proc/self/statm", "r");
  if (f == nullptr) return 0;
  unsigned long long size = 0, resident = 0;
  const int n = std::fscanf(f, "%llu %llu", &size, &resident);
  std::fclose(f);
  if (n != 2) return 0;
  return resident * static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
}

void ReleaseFreeHeap() { malloc_trim(0); }

}  // namespace seedance::governor
