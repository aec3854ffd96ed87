// The process heap as the memory budget sees it (glibc malloc).
//
// A budget on queued bytes only holds in RSS if freed memory goes back to the system: glibc
// raises its mmap threshold after large frees (so later request bodies land in the heap and
// stay resident) and keeps freed chunks in per-thread arenas. With a budget the runtime fixes
// the threshold, limits the arenas, and gives free heap pages back after trims.
#pragma once

#include <cstdint>

namespace seedance::governor {

// Fixed 128 KiB mmap threshold: a large buffer (a batch's request body, one large message at
// each stage of the pipeline) is mapped and unmapped, so freeing it gives the memory back
// instead of leaving it in the arena of the thread that used it. Every pipeline calls it,
// once, before the worker threads start.
void FixMmapThreshold();
// FixMmapThreshold, and at most two arenas. Call once, before the worker threads start.
void TuneHeapForBudget();
// Resident set size of this process, in bytes (0 when it cannot be read).
uint64_t ResidentBytes();
// Returns free heap pages to the system (malloc_trim).
void ReleaseFreeHeap();

}  // namespace seedance::governor
