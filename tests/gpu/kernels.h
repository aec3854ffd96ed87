// Small CUDA kernels for the GPU tests and the trim benchmark (tests/gpu/kernels.cu).
#pragma once

#include <cstdint>
#include <functional>

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
// Launches `times` AddOne kernels on `p` on the default stream without waiting.
bool AddOneManyAsync(void* p, uint64_t n, int times);
// Opens a global-mode graph capture on a new stream, captures AddOne(p, n), runs `during` on
// another thread while the capture is open, ends the capture and launches the graph (waits).
// False when the capture was broken or the launch failed.
bool CaptureAddOneWhile(void* p, uint64_t n, const std::function<void()>& during);
// Copies between device and host memory (either direction), waits.
bool Copy(void* dst, const void* src, uint64_t n);
// Bandwidth of cudaMemcpy between a device buffer and pinned host memory (GB/s, best of 5,
// the slower direction), or 0 on error.
double PinnedBandwidthGbps(uint64_t bytes);

// Adds a checksum of `p`'s bytes (each byte weighted by its position mod 251, plus 1) to *out
// (device memory) on `stream` (a cudaStream_t), without waiting. HostChecksum is the same on
// the host.
bool ChecksumIntoAsync(const void* p, uint64_t n, unsigned long long* out, void* stream);
unsigned long long HostChecksum(const void* p, uint64_t n);
// Holds `stream` (a cudaStream_t) until *flag (mapped pinned memory) becomes nonzero or
// `limit_ms` pass, without waiting; *timed_out (mapped pinned memory) is then 1 if the limit
// was reached. For tests that issue work while the device is held.
bool GateAsync(const volatile int* flag, int* timed_out, uint64_t limit_ms, void* stream);

}  // namespace seedance::gpu_testing
