// The CUDA tiers of seedance::trim (see MakeCudaTiers in seedance/trim.h).
//
// GPU memory: a block of at least the mapping granularity gets its own reserved virtual
// range and a physical allocation mapped into it (cuMemCreate / cuMemMap); Evict unmaps and
// releases the physical memory and keeps the range, Restore maps fresh memory at the same
// address. Smaller blocks are placed in one slab (cudaMalloc) by the best-fit sub-allocator.
// Occupancy is the bytes this tier backs against its budget, not the driver's "used".
//
// Pinned host memory: one cudaHostAlloc of the whole capacity at creation, placed by the
// sub-allocator in exact sizes, so nothing is pinned on the trim path.
//
// Copies: cudaMemcpyAsync on one non-blocking stream shared by the tiers, then an event wait
// on that stream only; the program's compute streams never wait for a trim.
//
// The driver API is reached through cudaGetDriverEntryPointByVersion and the runtime is
// linked statically: binaries start on machines without an NVIDIA driver.
#include <cuda.h>
#include <cuda_runtime.h>
#include <cudaTypedefs.h>

#include <fmt/format.h>

#include <memory>
#include <mutex>
#include <unordered_map>

#include "governor/sub_allocator.h"
#include "seedance/trim.h"

namespace seedance::trim {
namespace {

Status CudaError(cudaError_t e, const char* what) {
  return Status(StatusCode::kUnavailable,
                fmt::format("CUDA {}: {} ({})", what, cudaGetErrorString(e), static_cast<int>(e)));
}
Status DriverError(CUresult r, const char* what) {
  return Status(r == CUDA_ERROR_OUT_OF_MEMORY ? StatusCode::kResourceExhausted
                                              : StatusCode::kInternal,
                fmt::format("CUDA driver {}: error {}", what, static_cast<int>(r)));
}

// Driver entry points for virtual memory management.
struct Vmm {
  PFN_cuMemCreate_v10020 create = nullptr;
  PFN_cuMemRelease_v10020 release = nullptr;
  PFN_cuMemAddressReserve_v10020 reserve = nullptr;
  PFN_cuMemAddressFree_v10020 address_free = nullptr;
  PFN_cuMemMap_v10020 map = nullptr;
  PFN_cuMemUnmap_v10020 unmap = nullptr;
  PFN_cuMemSetAccess_v10020 set_access = nullptr;
  PFN_cuMemGetAllocationGranularity_v10020 granularity = nullptr;

  Status Load() {
    auto get = [](const char* name, void** fn) -> Status {
      cudaDriverEntryPointQueryResult q{};
      cudaError_t e = cudaGetDriverEntryPointByVersion(name, fn, 12000, cudaEnableDefault, &q);
      if (e != cudaSuccess || q != cudaDriverEntryPointSuccess || *fn == nullptr) {
        return Status(StatusCode::kUnavailable,
                      fmt::format("CUDA driver entry point {} not available", name));
      }
      return Status::Ok();
    };
    SEEDANCE_RETURN_IF_ERROR(get("cuMemCreate", reinterpret_cast<void**>(&create)));
    SEEDANCE_RETURN_IF_ERROR(get("cuMemRelease", reinterpret_cast<void**>(&release)));
    SEEDANCE_RETURN_IF_ERROR(get("cuMemAddressReserve", reinterpret_cast<void**>(&reserve)));
    SEEDANCE_RETURN_IF_ERROR(get("cuMemAddressFree", reinterpret_cast<void**>(&address_free)));
    SEEDANCE_RETURN_IF_ERROR(get("cuMemMap", reinterpret_cast<void**>(&map)));
    SEEDANCE_RETURN_IF_ERROR(get("cuMemUnmap", reinterpret_cast<void**>(&unmap)));
    SEEDANCE_RETURN_IF_ERROR(get("cuMemSetAccess", reinterpret_cast<void**>(&set_access)));
    return get("cuMemGetAllocationGranularity", reinterpret_cast<void**>(&granularity));
  }
};

// The copy stream and its event, shared by the tiers of one manager.
struct CopyEngine {
  int device = 0;
  cudaStream_t stream = nullptr;
  cudaEvent_t done = nullptr;
  ~CopyEngine() {
    if (done != nullptr) cudaEventDestroy(done);
    if (stream != nullptr) cudaStreamDestroy(stream);
  }
  Status Copy(void* dst, const void* src, uint64_t size) {
    cudaError_t e = cudaSetDevice(device);
    if (e == cudaSuccess) e = cudaMemcpyAsync(dst, src, size, cudaMemcpyDefault, stream);
    if (e == cudaSuccess) e = cudaEventRecord(done, stream);
    if (e == cudaSuccess) e = cudaEventSynchronize(done);
    return e == cudaSuccess ? Status::Ok() : CudaError(e, "copy");
  }
};

class CudaDeviceTier final : public Tier {
 public:
  CudaDeviceTier(std::shared_ptr<CopyEngine> engine, Vmm vmm, uint64_t budget, uint64_t slab_size)
      : engine_(std::move(engine)), vmm_(vmm), budget_(budget), slab_alloc_(slab_size) {}
  ~CudaDeviceTier() override {
    for (auto& [va, b] : blocks_) {
      if (b.backed) Unback(va, b);
      vmm_.address_free(va, b.size);
    }
    if (slab_ != nullptr) cudaFree(slab_);
  }

  Status Init() {
    prop_.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    prop_.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    prop_.location.id = engine_->device;
    size_t g = 0;
    CUresult r = vmm_.granularity(&g, &prop_, CU_MEM_ALLOC_GRANULARITY_RECOMMENDED);
    if (r != CUDA_SUCCESS) return DriverError(r, "cuMemGetAllocationGranularity");
    granularity_ = g;
    if (slab_alloc_.capacity() > 0) {
      cudaError_t e = cudaMalloc(&slab_, slab_alloc_.capacity());
      if (e != cudaSuccess) return CudaError(e, "cudaMalloc (small-block slab)");
    }
    return Status::Ok();
  }

  const std::string& name() const override { return name_; }
  uint64_t capacity() const override { return budget_; }
  uint64_t used() const override { return backed_ + slab_alloc_.used(); }
  double fragmentation() const override { return slab_alloc_.Fragmentation(); }

  Result<void*> Allocate(uint64_t size) override {
    if (size < granularity_) {
      if (used() + size > budget_) return Exhausted(size);
      auto off = slab_alloc_.Allocate(size);
      if (!off) return Exhausted(size);
      return static_cast<void*>(static_cast<char*>(slab_) + *off);
    }
    const uint64_t rounded = (size + granularity_ - 1) / granularity_ * granularity_;
    if (used() + rounded > budget_) return Exhausted(rounded);
    CUdeviceptr va = 0;
    CUresult r = vmm_.reserve(&va, rounded, granularity_, 0, 0);
    if (r != CUDA_SUCCESS) return DriverError(r, "cuMemAddressReserve");
    Block b{rounded, 0, false};
    Status s = Back(va, b);
    if (!s.ok()) {
      vmm_.address_free(va, rounded);
      return s;
    }
    blocks_[va] = b;
    return reinterpret_cast<void*>(va);
  }

  void Free(void* p) override {
    auto it = blocks_.find(reinterpret_cast<CUdeviceptr>(p));
    if (it == blocks_.end()) {
      slab_alloc_.Free(static_cast<uint64_t>(static_cast<char*>(p) - static_cast<char*>(slab_)));
      return;
    }
    if (it->second.backed) Unback(it->first, it->second);
    vmm_.address_free(it->first, it->second.size);
    blocks_.erase(it);
  }

  Status CopyFrom(void* dst, const void* src, uint64_t size, const Tier&, CopyUrgency) override {
    return engine_->Copy(dst, src, size);
  }

  bool KeepsAddress(const void* p) const override {
    return blocks_.count(reinterpret_cast<CUdeviceptr>(p)) != 0;
  }
  Status Evict(void* p) override {
    auto it = blocks_.find(reinterpret_cast<CUdeviceptr>(p));
    if (it == blocks_.end() || !it->second.backed) {
      return Status(StatusCode::kFailedPrecondition, "evict: not a backed mapped block");
    }
    // Work queued on other streams may still read the block: wait for the device first.
    cudaError_t e = cudaDeviceSynchronize();
    if (e != cudaSuccess) return CudaError(e, "synchronize before unmap");
    Unback(it->first, it->second);
    return Status::Ok();
  }
  Status Restore(void* p) override {
    auto it = blocks_.find(reinterpret_cast<CUdeviceptr>(p));
    if (it == blocks_.end() || it->second.backed) {
      return Status(StatusCode::kFailedPrecondition, "restore: not an evicted block");
    }
    if (used() + it->second.size > budget_) return Exhausted(it->second.size);
    return Back(it->first, it->second);
  }

 private:
  struct Block {
    uint64_t size;
    CUmemGenericAllocationHandle handle;
    bool backed;
  };

  Status Back(CUdeviceptr va, Block& b) {
    CUresult r = vmm_.create(&b.handle, b.size, &prop_, 0);
    if (r != CUDA_SUCCESS) return DriverError(r, "cuMemCreate");
    r = vmm_.map(va, b.size, 0, b.handle, 0);
    if (r == CUDA_SUCCESS) {
      CUmemAccessDesc access{};
      access.location = prop_.location;
      access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
      r = vmm_.set_access(va, b.size, &access, 1);
      if (r != CUDA_SUCCESS) vmm_.unmap(va, b.size);
    }
    if (r != CUDA_SUCCESS) {
      vmm_.release(b.handle);
      return DriverError(r, "cuMemMap");
    }
    b.backed = true;
    backed_ += b.size;
    return Status::Ok();
  }
  void Unback(CUdeviceptr va, Block& b) {
    vmm_.unmap(va, b.size);
    vmm_.release(b.handle);
    b.backed = false;
    backed_ -= b.size;
  }
  Status Exhausted(uint64_t size) const {
    return Status(StatusCode::kResourceExhausted,
                  fmt::format("{}: {} bytes over the budget ({} of {} used)", name_, size, used(),
                              budget_));
  }

  std::string name_ = "cuda-device";
  std::shared_ptr<CopyEngine> engine_;
  Vmm vmm_;
  CUmemAllocationProp prop_{};
  uint64_t granularity_ = 2 << 20;
  uint64_t budget_;
  uint64_t backed_ = 0;
  std::unordered_map<CUdeviceptr, Block> blocks_;
  void* slab_ = nullptr;
  governor::SubAllocator slab_alloc_;
};

class CudaPinnedTier final : public Tier {
 public:
  CudaPinnedTier(std::shared_ptr<CopyEngine> engine, uint64_t capacity)
      : engine_(std::move(engine)), alloc_(capacity) {}
  ~CudaPinnedTier() override {
    if (arena_ != nullptr) cudaFreeHost(arena_);
  }
  Status Init() {
    cudaError_t e = cudaHostAlloc(&arena_, alloc_.capacity(), cudaHostAllocPortable);
    return e == cudaSuccess ? Status::Ok() : CudaError(e, "cudaHostAlloc (pinned tier)");
  }
  const std::string& name() const override { return name_; }
  uint64_t capacity() const override { return alloc_.capacity(); }
  uint64_t used() const override { return alloc_.used(); }
  double fragmentation() const override { return alloc_.Fragmentation(); }
  Result<void*> Allocate(uint64_t size) override {
    auto off = alloc_.Allocate(size);
    if (!off) {
      return Status(StatusCode::kResourceExhausted,
                    fmt::format("{}: no free block of {} bytes", name_, size));
    }
    return static_cast<void*>(static_cast<char*>(arena_) + *off);
  }
  void Free(void* p) override {
    alloc_.Free(static_cast<uint64_t>(static_cast<char*>(p) - static_cast<char*>(arena_)));
  }
  Status CopyFrom(void* dst, const void* src, uint64_t size, const Tier&, CopyUrgency) override {
    return engine_->Copy(dst, src, size);
  }

 private:
  std::string name_ = "cuda-pinned";
  std::shared_ptr<CopyEngine> engine_;
  void* arena_ = nullptr;
  governor::SubAllocator alloc_;
};

}  // namespace

Result<std::vector<std::unique_ptr<Tier>>> MakeCudaTiers(const CudaTierOptions& o) {
  int count = 0;
  cudaError_t e = cudaGetDeviceCount(&count);
  if (e != cudaSuccess) return CudaError(e, "no usable device");
  if (o.device < 0 || o.device >= count) {
    return Status(StatusCode::kUnavailable,
                  fmt::format("CUDA device {} does not exist ({} found)", o.device, count));
  }
  if (o.device_budget == 0 || o.pinned_capacity == 0) {
    return Status(StatusCode::kInvalidArgument, "device_budget and pinned_capacity must be set");
  }
  e = cudaSetDevice(o.device);
  if (e != cudaSuccess) return CudaError(e, "cudaSetDevice");
  Vmm vmm;
  SEEDANCE_RETURN_IF_ERROR(vmm.Load());
  auto engine = std::make_shared<CopyEngine>();
  engine->device = o.device;
  e = cudaStreamCreateWithFlags(&engine->stream, cudaStreamNonBlocking);
  if (e == cudaSuccess) e = cudaEventCreateWithFlags(&engine->done, cudaEventDisableTiming);
  if (e != cudaSuccess) return CudaError(e, "copy stream");
  auto device = std::make_unique<CudaDeviceTier>(engine, vmm, o.device_budget,
                                                 std::min(o.small_arena, o.device_budget));
  SEEDANCE_RETURN_IF_ERROR(device->Init());
  auto pinned = std::make_unique<CudaPinnedTier>(engine, o.pinned_capacity);
  SEEDANCE_RETURN_IF_ERROR(pinned->Init());
  std::vector<std::unique_ptr<Tier>> tiers;
  tiers.push_back(std::move(device));
  tiers.push_back(std::move(pinned));
  return Result<std::vector<std::unique_ptr<Tier>>>(std::move(tiers));
}

}  // namespace seedance::trim
