// Small CUDA kernels for the GPU tests and the trim benchmark (tests/gpu/kernels.cu).
#pragma once

#include <cstdint>

namespace seedance::gpu_testing {

// Adds 1 to each byte of `p` on the default stream and waits. False on a CUDA error.
bool AddOne(void* p, uint64_t n);
// Sum of the bytes of `p` (device memory), read by a kernel; waits.
uint64_t DeviceSum(const void* p, uint64_t n);
// Launches a kernel that reads every byte of `p` (device memory) without waiting; Synchronize()
// waits for all of them. For the benchmark's "compute".
bool TouchAsync(const void* p, uint64_t n);
bool Synchronize();
// Captures AddOne(p, n) into a CUDA graph, returns an opaque handle (null on error).
void* CaptureAddOneGraph(void* p, uint64_t n);
bool LaunchGraph(void* graph);
void DestroyGraph(void* graph);
// Copies between device and host memory (either direction), waits.
bool Copy(void* dst, const void* src, uint64_t n);
// Bandwidth of cudaMemcpy between a device buffer and pinned host memory (GB/s, best of 5,
// the slower direction), or 0 on error.
double PinnedBandwidthGbps(uint64_t bytes);

}  // namespace seedance::gpu_testing
