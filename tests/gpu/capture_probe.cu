// capture_probe: which CUDA calls made on one thread break a graph capture running on another
// thread of the same device. The CUDA tiers' design depends on the answers (docs/trim.md, "Graph
// capture"); scripts/gpu-check prints this table on every GPU machine it runs on.
//
// For each call and each capture mode of the calling thread (relaxed, global), thread A begins a
// global-mode capture on a non-blocking stream and captures a kernel; thread B makes the call;
// A ends the capture. Prints: call, B's mode, the call's result, and whether the capture
// survived (cudaStreamEndCapture == cudaSuccess).
#include <cuda.h>
#include <cudaTypedefs.h>
#include <cuda_runtime.h>

#include <cstdio>
#include <functional>
#include <string>
#include <thread>
#include <vector>

namespace {

__global__ void Nop(int* p) {
  if (p != nullptr) *p = 1;
}

struct Probe {
  std::string name;
  std::function<cudaError_t()> call;
};

PFN_cuMemCreate_v10020 mem_create;
PFN_cuMemRelease_v10020 mem_release;
PFN_cuMemAddressReserve_v10020 mem_reserve;
PFN_cuMemAddressFree_v10020 mem_address_free;
PFN_cuMemMap_v10020 mem_map;
PFN_cuMemUnmap_v10020 mem_unmap;
PFN_cuMemSetAccess_v10020 mem_set_access;

template <typename F>
void Load(const char* name, F* fn) {
  cudaDriverEntryPointQueryResult q{};
  cudaGetDriverEntryPointByVersion(name, reinterpret_cast<void**>(fn), 12000, cudaEnableDefault,
                                   &q);
}

cudaError_t VmmCycle() {  // reserve, create, map, set access, unmap, release, free
  CUmemAllocationProp prop{};
  prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  prop.location.id = 0;
  const size_t size = 2 << 20;
  CUdeviceptr va = 0;
  CUmemGenericAllocationHandle h = 0;
  if (mem_reserve(&va, size, size, 0, 0) != CUDA_SUCCESS) return cudaErrorUnknown;
  CUresult r = mem_create(&h, size, &prop, 0);
  if (r == CUDA_SUCCESS) r = mem_map(va, size, 0, h, 0);
  CUmemAccessDesc a{};
  a.location = prop.location;
  a.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
  if (r == CUDA_SUCCESS) r = mem_set_access(va, size, &a, 1);
  if (r == CUDA_SUCCESS) r = mem_unmap(va, size);
  if (h != 0) mem_release(h);
  mem_address_free(va, size);
  return r == CUDA_SUCCESS ? cudaSuccess : cudaErrorUnknown;
}

}  // namespace

int main() {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0) {
    std::printf("capture_probe: no usable CUDA device\n");
    return 1;
  }
  cudaSetDevice(0);
  cudaFree(nullptr);
  Load("cuMemCreate", &mem_create);
  Load("cuMemRelease", &mem_release);
  Load("cuMemAddressReserve", &mem_reserve);
  Load("cuMemAddressFree", &mem_address_free);
  Load("cuMemMap", &mem_map);
  Load("cuMemUnmap", &mem_unmap);
  Load("cuMemSetAccess", &mem_set_access);

  cudaStream_t own;
  cudaStreamCreateWithFlags(&own, cudaStreamNonBlocking);
  cudaEvent_t own_event;
  cudaEventCreateWithFlags(&own_event, cudaEventBlockingSync | cudaEventDisableTiming);
  void* dev = nullptr;
  void* pinned = nullptr;
  cudaMalloc(&dev, 4 << 20);
  cudaHostAlloc(&pinned, 4 << 20, cudaHostAllocPortable);

  std::vector<Probe> probes = {
      {"cudaDeviceSynchronize", [] { return cudaDeviceSynchronize(); }},
      {"cudaStreamQuery(legacy)", [] { return cudaStreamQuery(cudaStreamLegacy); }},
      {"cudaStreamSynchronize(legacy)", [] { return cudaStreamSynchronize(cudaStreamLegacy); }},
      {"cudaEventRecord(legacy)+Sync",
       [&] {
         cudaError_t e = cudaEventRecord(own_event, cudaStreamLegacy);
         return e == cudaSuccess ? cudaEventSynchronize(own_event) : e;
       }},
      {"memcpyAsync D2H own stream+event",
       [&] {
         cudaError_t e = cudaMemcpyAsync(pinned, dev, 4 << 20, cudaMemcpyDefault, own);
         if (e == cudaSuccess) e = cudaEventRecord(own_event, own);
         return e == cudaSuccess ? cudaEventSynchronize(own_event) : e;
       }},
      {"cudaStreamSynchronize(own)", [&] { return cudaStreamSynchronize(own); }},
      {"VMM reserve/create/map/unmap/release", [] { return VmmCycle(); }},
      {"cudaMalloc+cudaFree",
       [] {
         void* p = nullptr;
         cudaError_t e = cudaMalloc(&p, 1 << 20);
         return e == cudaSuccess ? cudaFree(p) : e;
       }},
      {"cudaSetDevice/cudaGetDevice",
       [] {
         int d = -1;
         cudaError_t e = cudaGetDevice(&d);
         return e == cudaSuccess ? cudaSetDevice(d) : e;
       }},
  };

  std::printf("%-40s %-8s %-34s %s\n", "call on thread B", "B mode", "call result", "capture on A");
  int broken = 0;
  for (const Probe& probe : probes) {
    for (cudaStreamCaptureMode mode : {cudaStreamCaptureModeRelaxed, cudaStreamCaptureModeGlobal}) {
      cudaStream_t s;
      cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
      cudaError_t begin = cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal);
      Nop<<<1, 1, 0, s>>>(nullptr);
      cudaError_t result = cudaSuccess;
      std::thread b([&] {
        cudaSetDevice(0);
        cudaStreamCaptureMode m = mode;
        cudaThreadExchangeStreamCaptureMode(&m);
        result = probe.call();
        cudaThreadExchangeStreamCaptureMode(&m);
        (void)cudaGetLastError();
      });
      b.join();
      cudaGraph_t graph = nullptr;
      cudaError_t end = cudaStreamEndCapture(s, &graph);
      (void)cudaGetLastError();
      if (graph != nullptr) cudaGraphDestroy(graph);
      cudaStreamDestroy(s);
      cudaDeviceSynchronize();
      (void)cudaGetLastError();
      const bool survived = begin == cudaSuccess && end == cudaSuccess;
      broken += survived ? 0 : 1;
      std::printf("%-40s %-8s %-34s %s\n", probe.name.c_str(),
                  mode == cudaStreamCaptureModeRelaxed ? "relaxed" : "global",
                  result == cudaSuccess ? "ok" : cudaGetErrorName(result),
                  survived ? "survived" : cudaGetErrorName(end));
    }
  }
  std::printf("capture_probe: %d of %zu combinations broke the capture\n", broken,
              probes.size() * 2);
  return 0;
}
