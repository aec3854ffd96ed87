#include "kernels.h"

#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <functional>
#include <thread>

namespace seedance::gpu_testing {
namespace {

__global__ void AddOneKernel(unsigned char* p, uint64_t n) {
  for (uint64_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
    p[i] = static_cast<unsigned char>(p[i] + 1);
  }
}

__global__ void SumKernel(const unsigned char* p, uint64_t n, unsigned long long* out) {
  unsigned long long local = 0;
  for (uint64_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
    local += p[i];
  }
  atomicAdd(out, local);
}

__global__ void TouchKernel(const unsigned char* p, uint64_t n, unsigned long long* sink) {
  unsigned long long local = 0;
  for (uint64_t i = (blockIdx.x * blockDim.x + threadIdx.x) * 64; i < n;
       i += gridDim.x * blockDim.x * 64) {
    local += p[i];
  }
  if (local == 0xFFFFFFFFFFFFFFFFull) *sink = local;  // keeps the loads
}

__global__ void ChecksumKernel(const unsigned char* p, uint64_t n, unsigned long long* out) {
  unsigned long long local = 0;
  for (uint64_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
    local += static_cast<unsigned long long>(p[i]) * (i % 251 + 1);
  }
  atomicAdd(out, local);
}

__device__ uint64_t GlobalNanoseconds() {
  uint64_t t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

__global__ void GateKernel(const volatile int* flag, int* timed_out, uint64_t limit_ns) {
  const uint64_t start = GlobalNanoseconds();
  while (*flag == 0) {
    if (GlobalNanoseconds() - start > limit_ns) {
      *timed_out = 1;
      return;
    }
    __nanosleep(1000);
  }
}

}  // namespace

bool ChecksumIntoAsync(const void* p, uint64_t n, unsigned long long* out, void* stream) {
  ChecksumKernel<<<256, 256, 0, static_cast<cudaStream_t>(stream)>>>(
      static_cast<const unsigned char*>(p), n, out);
  return cudaGetLastError() == cudaSuccess;
}

unsigned long long HostChecksum(const void* p, uint64_t n) {
  const auto* b = static_cast<const unsigned char*>(p);
  unsigned long long sum = 0;
  for (uint64_t i = 0; i < n; ++i) sum += static_cast<unsigned long long>(b[i]) * (i % 251 + 1);
  return sum;
}

bool GateAsync(const volatile int* flag, int* timed_out, uint64_t limit_ms, void* stream) {
  GateKernel<<<1, 1, 0, static_cast<cudaStream_t>(stream)>>>(flag, timed_out,
                                                             limit_ms * 1000000ull);
  return cudaGetLastError() == cudaSuccess;
}

bool TouchAsync(const void* p, uint64_t n) {
  static unsigned long long* sink = nullptr;
  if (sink == nullptr && cudaMalloc(&sink, sizeof *sink) != cudaSuccess) return false;
  const unsigned blocks = static_cast<unsigned>(std::min<uint64_t>(256, (n / 64 + 255) / 256 + 1));
  TouchKernel<<<blocks, 256>>>(static_cast<const unsigned char*>(p), n, sink);
  return cudaGetLastError() == cudaSuccess;
}

bool Synchronize() { return cudaDeviceSynchronize() == cudaSuccess; }

bool AddOne(void* p, uint64_t n) {
  AddOneKernel<<<256, 256>>>(static_cast<unsigned char*>(p), n);
  return cudaDeviceSynchronize() == cudaSuccess;
}

uint64_t DeviceSum(const void* p, uint64_t n) {
  unsigned long long* out = nullptr;
  if (cudaMalloc(&out, sizeof *out) != cudaSuccess) return 0;
  cudaMemset(out, 0, sizeof *out);
  SumKernel<<<256, 256>>>(static_cast<const unsigned char*>(p), n, out);
  unsigned long long host = 0;
  cudaMemcpy(&host, out, sizeof host, cudaMemcpyDeviceToHost);
  cudaFree(out);
  return host;
}

void* CaptureAddOneGraph(void* p, uint64_t n) {
  cudaStream_t stream;
  if (cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking) != cudaSuccess) return nullptr;
  cudaGraph_t graph = nullptr;
  cudaGraphExec_t exec = nullptr;
  cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal);
  AddOneKernel<<<256, 256, 0, stream>>>(static_cast<unsigned char*>(p), n);
  cudaStreamEndCapture(stream, &graph);
  if (graph == nullptr || cudaGraphInstantiate(&exec, graph, 0) != cudaSuccess) exec = nullptr;
  if (graph != nullptr) cudaGraphDestroy(graph);
  cudaStreamDestroy(stream);
  return exec;
}

bool LaunchGraph(void* graph) {
  return cudaGraphLaunch(static_cast<cudaGraphExec_t>(graph), 0) == cudaSuccess &&
         cudaDeviceSynchronize() == cudaSuccess;
}

bool AddOneManyAsync(void* p, uint64_t n, int times) {
  for (int i = 0; i < times; ++i) {
    AddOneKernel<<<64, 256>>>(static_cast<unsigned char*>(p), n);
  }
  return cudaGetLastError() == cudaSuccess;
}

bool CaptureAddOneWhile(void* p, uint64_t n, const std::function<void()>& during) {
  cudaStream_t stream;
  if (cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking) != cudaSuccess) return false;
  cudaGraph_t graph = nullptr;
  cudaGraphExec_t exec = nullptr;
  bool ok = cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal) == cudaSuccess;
  AddOneKernel<<<256, 256, 0, stream>>>(static_cast<unsigned char*>(p), n);
  std::thread other(during);  // e.g. a trim, on another thread, while the capture is open
  other.join();
  ok = cudaStreamEndCapture(stream, &graph) == cudaSuccess && ok && graph != nullptr;
  ok = ok && cudaGraphInstantiate(&exec, graph, 0) == cudaSuccess;
  ok = ok && cudaGraphLaunch(exec, stream) == cudaSuccess &&
       cudaStreamSynchronize(stream) == cudaSuccess;
  if (exec != nullptr) cudaGraphExecDestroy(exec);
  if (graph != nullptr) cudaGraphDestroy(graph);
  cudaStreamDestroy(stream);
  (void)cudaGetLastError();
  return ok;
}

void DestroyGraph(void* graph) { cudaGraphExecDestroy(static_cast<cudaGraphExec_t>(graph)); }

bool Copy(void* dst, const void* src, uint64_t n) {
  return cudaMemcpy(dst, src, n, cudaMemcpyDefault) == cudaSuccess;
}

double PinnedBandwidthGbps(uint64_t bytes) {
  void* dev = nullptr;
  void* host = nullptr;
  if (cudaMalloc(&dev, bytes) != cudaSuccess) return 0;
  if (cudaHostAlloc(&host, bytes, cudaHostAllocDefault) != cudaSuccess) {
    cudaFree(dev);
    return 0;
  }
  double best_down = 0, best_up = 0;
  for (int i = 0; i < 5; ++i) {
    auto t0 = std::chrono::steady_clock::now();
    cudaMemcpy(host, dev, bytes, cudaMemcpyDeviceToHost);
    auto t1 = std::chrono::steady_clock::now();
    cudaMemcpy(dev, host, bytes, cudaMemcpyHostToDevice);
    auto t2 = std::chrono::steady_clock::now();
    best_down = std::max(best_down, bytes / std::chrono::duration<double>(t1 - t0).count() / 1e9);
    best_up = std::max(best_up, bytes / std::chrono::duration<double>(t2 - t1).count() / 1e9);
  }
  cudaFreeHost(host);
  cudaFree(dev);
  return std::min(best_down, best_up);
}

}  // namespace seedance::gpu_testing
