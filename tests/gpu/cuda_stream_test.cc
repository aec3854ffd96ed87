// Weight streaming on a CUDA device (trim/cuda_stream_device.h): the executor's copies on the
// copy stream, the compute stream waiting for them on the device. Label `gpu`; without a usable
// device every test skips and says why (scripts/gpu-check --stream runs them).
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <chrono>
#include <cstring>
#include <random>
#include <vector>

#include "gpu/kernels.h"
#include "trim/cuda_stream_device.h"
#include "trim/stream_executor.h"
#include "trim/stream_plan.h"

namespace seedance::trim {
namespace {

std::string NoDevice() {
  int count = 0;
  const cudaError_t e = cudaGetDeviceCount(&count);
  if (e != cudaSuccess) return std::string("no usable CUDA device: ") + cudaGetErrorString(e);
  return count == 0 ? "no CUDA device" : "";
}

#define SKIP_WITHOUT_DEVICE()                       \
  if (std::string why = NoDevice(); !why.empty()) { \
    (void)cudaGetLastError();                       \
    GTEST_SKIP() << why;                            \
  }

// Units of random sizes and bytes in pinned memory, resident ones copied to the device.
struct Units {
  std::vector<UnitRecord> records;
  std::vector<void*> host;
  std::vector<void*> device;
  std::vector<unsigned long long> checksum;
  ~Units() {
    for (void* p : host) cudaFreeHost(p);
    for (void* p : device) cudaFree(p);
  }
};

void MakeUnits(uint32_t seed, size_t n, Units* u) {
  std::mt19937 rng(seed);
  for (size_t i = 0; i < n; ++i) {
    const uint64_t bytes = (64 << 10) + rng() % (4 << 20);
    void* p = nullptr;
    ASSERT_EQ(cudaHostAlloc(&p, bytes, cudaHostAllocDefault), cudaSuccess);
    auto* b = static_cast<unsigned char*>(p);
    for (uint64_t k = 0; k < bytes; ++k) b[k] = static_cast<unsigned char>(rng());
    u->host.push_back(p);
    u->records.push_back({bytes, 1e-4});
    u->checksum.push_back(gpu_testing::HostChecksum(p, bytes));
  }
}

// Three iterations are issued while a gate kernel holds the compute stream: a host wait for
// the device anywhere on the path (an event or stream synchronization) would hold the host
// until the gate's time limit, which the gate then reports. Every unit's compute reads exactly
// its bytes, in every iteration, though the ring is reused many times over.
TEST(CudaStreamTest, IterationsIssueWhileTheDeviceIsHeldAndEveryUnitReadsItsBytes) {
  SKIP_WITHOUT_DEVICE();
  Units u;
  MakeUnits(41, 24, &u);
  uint64_t model = 0;
  for (const auto& r : u.records) model += r.bytes;
  auto plan = PlanStream(u.records, {.budget = model * 2 / 5, .link_bytes_per_second = 20e9});
  ASSERT_TRUE(plan.has_value()) << plan.error().ToString();
  ASSERT_GT(plan->streamed_bytes, 0u);
  std::vector<StreamUnit> units;
  for (size_t i = 0; i < u.records.size(); ++i) {
    void* d = nullptr;
    if (plan->resident[i]) {
      ASSERT_EQ(cudaMalloc(&d, u.records[i].bytes), cudaSuccess);
      ASSERT_EQ(cudaMemcpy(d, u.host[i], u.records[i].bytes, cudaMemcpyHostToDevice), cudaSuccess);
      u.device.push_back(d);
    }
    units.push_back({u.host[i], d, u.records[i].bytes});
  }
  void* ring = nullptr;
  ASSERT_EQ(cudaMalloc(&ring, plan->ring_bytes), cudaSuccess);
  std::vector<void*> resident_ptrs;
  std::vector<const void*> host_ptrs;
  for (const auto& s : units) {
    resident_ptrs.push_back(s.resident);
    host_ptrs.push_back(s.host);
  }
  ASSERT_TRUE(
      CheckCudaStreamMemory(0, host_ptrs.data(), resident_ptrs.data(), units.size(), ring).ok());
  cudaStream_t compute = nullptr;
  ASSERT_EQ(cudaStreamCreateWithFlags(&compute, cudaStreamNonBlocking), cudaSuccess);
  constexpr int kIterations = 3;
  const size_t n = units.size();
  unsigned long long* sums = nullptr;
  ASSERT_EQ(cudaMalloc(&sums, kIterations * n * sizeof *sums), cudaSuccess);
  ASSERT_EQ(cudaMemset(sums, 0, kIterations * n * sizeof *sums), cudaSuccess);
  int* gate = nullptr;  // [0] the flag, [1] timed out
  ASSERT_EQ(cudaHostAlloc(reinterpret_cast<void**>(&gate), 2 * sizeof(int), cudaHostAllocMapped),
            cudaSuccess);
  gate[0] = gate[1] = 0;
  {
    auto device = MakeCudaStreamDevice(0, compute);
    ASSERT_TRUE(device.has_value()) << device.error().ToString();
    StreamExecutor ex(*plan, units, ring, **device);
    ASSERT_TRUE(gpu_testing::GateAsync(&gate[0], &gate[1], 20000, compute));
    const auto t0 = std::chrono::steady_clock::now();
    for (int it = 0; it < kIterations; ++it) {
      for (size_t i = 0; i < n; ++i) {
        auto p = ex.Begin(i);
        ASSERT_TRUE(p.has_value()) << p.error().ToString();
        ASSERT_TRUE(gpu_testing::ChecksumIntoAsync(*p, units[i].bytes, &sums[it * n + i], compute));
        ASSERT_TRUE(ex.End(i).ok());
      }
    }
    const double issue_seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    static_cast<volatile int*>(gate)[0] = 1;  // let the compute stream go
    ASSERT_EQ(cudaStreamSynchronize(compute), cudaSuccess);
    EXPECT_EQ(gate[1], 0) << "the gate timed out: the host waited for the held device";
    EXPECT_LT(issue_seconds, 10.0);
    EXPECT_TRUE((*device)->Health().ok()) << (*device)->Health().ToString();
    // Events were queried while pending: "not ready" must not be left as the thread's error
    // (PyTorch checks it after each kernel launch).
    EXPECT_EQ(cudaPeekAtLastError(), cudaSuccess);
    EXPECT_EQ((*device)->host_waits(), 0u);
    EXPECT_EQ(ex.stats().issued_at_begin, 1u);
    EXPECT_GE(ex.stats().bytes_copied, kIterations * plan->streamed_bytes);
  }  // the device waits for its copies before the ring is freed
  std::vector<unsigned long long> got(kIterations * n);
  ASSERT_EQ(cudaMemcpy(got.data(), sums, got.size() * sizeof *sums, cudaMemcpyDeviceToHost),
            cudaSuccess);
  for (int it = 0; it < kIterations; ++it) {
    for (size_t i = 0; i < n; ++i) {
      EXPECT_EQ(got[it * n + i], u.checksum[i])
          << "iteration " << it << " unit " << i << (plan->resident[i] ? " (resident)" : "");
    }
  }
  cudaFreeHost(gate);
  cudaFree(sums);
  cudaFree(ring);
  cudaStreamDestroy(compute);
}

TEST(CudaStreamTest, MemoryOfTheWrongKindIsRefusedSayingWhich) {
  SKIP_WITHOUT_DEVICE();
  std::vector<char> pageable(1 << 16);
  void* device = nullptr;
  ASSERT_EQ(cudaMalloc(&device, 1 << 16), cudaSuccess);
  const void* host[1] = {pageable.data()};
  void* resident[1] = {nullptr};
  Status s = CheckCudaStreamMemory(0, host, resident, 1, device);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("host[0] is not pinned host memory"), std::string::npos)
      << s.ToString();
  void* pinned = nullptr;
  ASSERT_EQ(cudaHostAlloc(&pinned, 1 << 16, cudaHostAllocDefault), cudaSuccess);
  host[0] = pinned;
  EXPECT_TRUE(CheckCudaStreamMemory(0, host, resident, 1, device).ok());
  s = CheckCudaStreamMemory(0, host, resident, 1, pinned);
  EXPECT_NE(s.message().find("the ring is not device memory"), std::string::npos);
  cudaFreeHost(pinned);
  cudaFree(device);
}

}  // namespace
}  // namespace seedance::trim
