// The CUDA tiers of seedance::trim (see MakeCudaTiers in seedance/trim.h).
//
// GPU memory: a block of at least the mapping granularity gets its own reserved virtual
// range and a physical allocation mapped into it (cuMemCreate / cuMemMap, access set for the
// device and its peers after every map); Evict unmaps and releases the physical memory and
// keeps the range, Restore maps fresh memory at the same address. Smaller blocks are placed by
// the best-fit sub-allocator in one reserved small-block range whose granules are backed on
// first use and released when their last block goes (a reference count per granule); when the
// range has no room, a small block gets a granule of its own. used() is the bytes backed:
// every granule counts against the budget, nothing lives outside it.
//
// Ordering (the release contract in seedance/trim.h): a copy out of device memory, an unmap
// and a free first wait for the work issued before (CopyEngine::WaitForIssuedWork: every
// stream, or with capture_safe the legacy stream), so a kernel still using a released buffer
// finishes before its bytes are read or its memory goes.
//
// Pinned host memory: one cudaHostAlloc of the whole capacity at creation, placed by the
// sub-allocator in exact sizes, so nothing is pinned on the trim path.
//
// Every entry point selects the tier's device and relaxed capture mode (OnDevice) and
// restores the caller's.
#include <algorithm>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "seedance/trim.h"
#include "trim/cuda/cuda_support.h"
#include "trim/cuda/zero_block_staging.h"
#include "trim/sub_allocator.h"

namespace seedance::trim {
namespace {

using cuda::CopyEngine;
using cuda::Driver;
using cuda::DriverError;
using cuda::OnDevice;
using cuda::RuntimeError;

class CudaDeviceTier final : public Tier {
 public:
  CudaDeviceTier(std::shared_ptr<CopyEngine> engine, Driver driver, const CudaTierOptions& o)
      : engine_(std::move(engine)),
        driver_(driver),
        budget_(o.device_budget),
        small_range_(o.small_arena),
        peers_(o.peer_devices),
        posix_fd_(o.posix_fd_handles),
        small_alloc_(0) {}

  ~CudaDeviceTier() override {
    OnDevice on(engine_->device());
    (void)engine_->WaitForIssuedWork();  // nothing may still use what is unmapped below
    staging_.reset();                    // cudaFree, with the device current
    for (auto& [va, b] : blocks_) {
      if (b.backed) Unmap(va, b.size, b.handle);
      driver_.address_free(va, b.size);
    }
    for (size_t g = 0; g < granules_.size(); ++g) {
      if (granules_[g].users > 0) Unmap(GranuleAddress(g), granularity_, granules_[g].handle);
    }
    if (small_base_ != 0) driver_.address_free(small_base_, small_range_);
  }

  Status Init() {
    OnDevice on(engine_->device());
    if (on.status() != cudaSuccess) return RuntimeError(on.status(), "cudaSetDevice");
    prop_.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    prop_.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    prop_.location.id = engine_->device();
    if (posix_fd_) prop_.requestedHandleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
    size_t g = 0;
    CUresult r = driver_.granularity(&g, &prop_, CU_MEM_ALLOC_GRANULARITY_RECOMMENDED);
    if (r != CUDA_SUCCESS) return DriverError(r, "cuMemGetAllocationGranularity");
    granularity_ = g;
    access_.push_back(Access(engine_->device()));
    for (int peer : peers_) {
      int can = 0;
      cudaError_t e = cudaDeviceCanAccessPeer(&can, engine_->device(), peer);
      if (e != cudaSuccess || can == 0) {
        return FailedPreconditionError("CUDA device " + std::to_string(peer) +
                                       " cannot access device " +
                                       std::to_string(engine_->device()) + " (peer_devices)");
      }
      access_.push_back(Access(peer));
    }
    small_range_ = small_range_ / granularity_ * granularity_;
    if (small_range_ > 0) {
      r = driver_.reserve(&small_base_, small_range_, granularity_, 0, 0);
      if (r != CUDA_SUCCESS) return DriverError(r, "cuMemAddressReserve (small-block range)");
      small_alloc_ = SubAllocator(small_range_);
      granules_.resize(small_range_ / granularity_);
    }
    return Status::Ok();
  }

  const std::string& name() const override { return name_; }
  MemoryKind memory() const override { return MemoryKind::kDevice; }
  bool CanCopyFrom(const Tier&) const override { return true; }  // the copy engine reaches all
  uint64_t capacity() const override { return budget_; }
  uint64_t used() const override { return backed_; }
  // Every block is its own physical allocation (small ones share granules of their own
  // range): free device memory never splits into holes that a block cannot use.
  double fragmentation() const override { return 0; }

  Result<void*> Allocate(uint64_t size) override {
    OnDevice on(engine_->device());
    if (on.status() != cudaSuccess) return RuntimeError(on.status(), "cudaSetDevice");
    if (size < granularity_ && small_base_ != 0) {
      auto small = AllocateSmall(size);
      if (small || small.error().code() != StatusCode::kNotFound) return small;
      // The small-block range is full: a granule of its own below.
    }
    return AllocateOwn(size);
  }

  // A block with its own reserved range, backed now: it keeps its address across moves.
  Result<void*> AllocateOwn(uint64_t size) {
    OnDevice on(engine_->device());
    if (on.status() != cudaSuccess) return RuntimeError(on.status(), "cudaSetDevice");
    const uint64_t rounded = Round(std::max<uint64_t>(size, 1));
    if (backed_ + rounded > budget_) return Exhausted(rounded);
    CUdeviceptr va = 0;
    CUresult r = driver_.reserve(&va, rounded, granularity_, 0, 0);
    if (r != CUDA_SUCCESS) return DriverError(r, "cuMemAddressReserve");
    Block b{rounded, 0, false};
    Status s = Map(va, rounded, &b.handle);
    if (!s.ok()) {
      driver_.address_free(va, rounded);
      return s;
    }
    b.backed = true;
    backed_ += rounded;
    blocks_[va] = b;
    return reinterpret_cast<void*>(va);
  }

  // A stable buffer of at least half a granule gets a range of its own (it keeps its address
  // and can move; at most twice its size backed); smaller ones share the small-block range
  // (they cannot keep their address there, so the manager leaves them in place).
  Result<void*> AllocateStable(uint64_t size) override {
    if (size >= granularity_ / 2) return AllocateOwn(size);
    return Allocate(size);
  }

  void Free(void* p) override {
    OnDevice on(engine_->device());
    (void)engine_->WaitForIssuedWork();  // work issued before the release may still use it
    const auto va = reinterpret_cast<CUdeviceptr>(p);
    auto it = blocks_.find(va);
    if (it == blocks_.end()) {
      FreeSmall(va);
      return;
    }
    if (it->second.backed) {
      Unmap(va, it->second.size, it->second.handle);
      backed_ -= it->second.size;
    }
    driver_.address_free(va, it->second.size);
    blocks_.erase(it);
  }

  Status CopyFrom(void* dst, const void* src, uint64_t size, const Tier& from,
                  CopyUrgency urgency) override {
    return engine_->Copy(
        dst, src, size,
        urgency == CopyUrgency::kWaited ? CopyEngine::kUpWaited : CopyEngine::kUpBackground,
        from.memory() == MemoryKind::kDevice);
  }

  bool KeepsAddress(const void* p) const override {
    return blocks_.count(reinterpret_cast<CUdeviceptr>(p)) != 0;
  }

  // The zero-block codec (ZeroBlockStaging): encoded on the device, one copy per chunk of only
  // the non-zero blocks down to pinned memory, expanded on the device on the way back. Its
  // staging area is taken from the budget at the first encoded move and kept from then on (a
  // buffer lying encoded must always be able to come back).
  bool RunsZeroBlockCodec(const Tier& slower) const override {
    return slower.memory() == MemoryKind::kHost;
  }
  Result<uint64_t> ZeroBlockEncodedSize(const void* p, uint64_t size) override {
    std::lock_guard<std::mutex> lock(staging_mu_);
    SEEDANCE_RETURN_IF_ERROR(EnsureStaging());
    uint64_t encoded = 0;
    SEEDANCE_RETURN_IF_ERROR(engine_->Run(
        CopyEngine::kDownWaited, /*from_device=*/true,
        [&](cudaStream_t stream) { return staging_->EncodedSize(p, size, stream, &encoded); }));
    return encoded;
  }
  Status EncodeTo(void* dst, uint64_t encoded, const Tier&, const void* src,
                  uint64_t size) override {
    std::lock_guard<std::mutex> lock(staging_mu_);
    if (staging_ == nullptr) return FailedPreconditionError(name_ + ": encode before sizing");
    return engine_->Run(CopyEngine::kDownWaited, /*from_device=*/true, [&](cudaStream_t stream) {
      return staging_->Encode(src, size, dst, encoded, stream);
    });
  }
  Status DecodeFrom(void* dst, uint64_t size, const Tier&, const void* src,
                    uint64_t encoded) override {
    std::lock_guard<std::mutex> lock(staging_mu_);
    if (staging_ == nullptr) return FailedPreconditionError(name_ + ": decode before encoding");
    return engine_->Run(CopyEngine::kUpWaited, /*from_device=*/false, [&](cudaStream_t stream) {
      return staging_->Decode(src, encoded, dst, size, stream);
    });
  }

  Status Evict(void* p) override {
    auto it = blocks_.find(reinterpret_cast<CUdeviceptr>(p));
    if (it == blocks_.end() || !it->second.backed) {
      return FailedPreconditionError("evict: not a backed mapped block");
    }
    // Work queued on any stream may still use the block: wait for the device first.
    SEEDANCE_RETURN_IF_ERROR(engine_->WaitForIssuedWork());
    OnDevice on(engine_->device());
    Unmap(it->first, it->second.size, it->second.handle);
    it->second.backed = false;
    backed_ -= it->second.size;
    return Status::Ok();
  }

  Status Restore(void* p) override {
    auto it = blocks_.find(reinterpret_cast<CUdeviceptr>(p));
    if (it == blocks_.end() || it->second.backed) {
      return FailedPreconditionError("restore: not an evicted block");
    }
    if (backed_ + it->second.size > budget_) return Exhausted(it->second.size);
    OnDevice on(engine_->device());
    if (on.status() != cudaSuccess) return RuntimeError(on.status(), "cudaSetDevice");
    SEEDANCE_RETURN_IF_ERROR(Map(it->first, it->second.size, &it->second.handle));
    it->second.backed = true;
    backed_ += it->second.size;
    return Status::Ok();
  }

 private:
  struct Block {
    uint64_t size;  // whole granules
    CUmemGenericAllocationHandle handle;
    bool backed;
  };
  struct Granule {       // of the small-block range
    uint32_t users = 0;  // blocks that touch it; backed while > 0
    CUmemGenericAllocationHandle handle = 0;
  };

  uint64_t Round(uint64_t size) const {
    return (size + granularity_ - 1) / granularity_ * granularity_;
  }
  CUdeviceptr GranuleAddress(size_t g) const { return small_base_ + g * granularity_; }
  static CUmemAccessDesc Access(int device) {
    CUmemAccessDesc a{};
    a.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    a.location.id = device;
    a.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
    return a;
  }

  // Backs [va, va + size) with new physical memory, readable and writable by the device and
  // its peers.
  Status Map(CUdeviceptr va, uint64_t size, CUmemGenericAllocationHandle* handle) {
    CUresult r = driver_.create(handle, size, &prop_, 0);
    if (r != CUDA_SUCCESS) return DriverError(r, "cuMemCreate");
    r = driver_.map(va, size, 0, *handle, 0);
    if (r == CUDA_SUCCESS) {
      r = driver_.set_access(va, size, access_.data(), access_.size());
      if (r != CUDA_SUCCESS) driver_.unmap(va, size);
    }
    if (r != CUDA_SUCCESS) {
      driver_.release(*handle);
      return DriverError(r, "cuMemMap/cuMemSetAccess");
    }
    return Status::Ok();
  }
  // REQUIRES: the device has finished with the range (synchronised).
  void Unmap(CUdeviceptr va, uint64_t size, CUmemGenericAllocationHandle handle) {
    driver_.unmap(va, size);
    driver_.release(handle);
  }

  // A block in the small-block range, its granules backed as needed. kNotFound when the
  // range has no room (the caller falls back to a granule of its own).
  Result<void*> AllocateSmall(uint64_t size) {
    auto off = small_alloc_.Allocate(size);
    if (!off) return NotFoundError("small-block range full");
    const size_t first = *off / granularity_;
    const size_t last = (*off + size - 1) / granularity_;
    uint64_t need = 0;
    for (size_t g = first; g <= last; ++g) need += granules_[g].users == 0 ? granularity_ : 0;
    if (backed_ + need > budget_) {
      small_alloc_.Free(*off);
      return Exhausted(need);
    }
    for (size_t g = first; g <= last; ++g) {
      if (granules_[g].users == 0) {
        Status s = Map(GranuleAddress(g), granularity_, &granules_[g].handle);
        if (!s.ok()) {
          for (size_t u = first; u < g; ++u) Unuse(u);
          small_alloc_.Free(*off);
          return s;
        }
        backed_ += granularity_;
      }
      ++granules_[g].users;
    }
    small_sizes_[*off] = size;
    return reinterpret_cast<void*>(small_base_ + *off);
  }
  void FreeSmall(CUdeviceptr va) {
    const uint64_t off = va - small_base_;
    auto it = small_sizes_.find(off);
    if (it == small_sizes_.end()) return;
    for (size_t g = off / granularity_; g <= (off + it->second - 1) / granularity_; ++g) Unuse(g);
    small_alloc_.Free(off);
    small_sizes_.erase(it);
  }
  void Unuse(size_t g) {
    if (--granules_[g].users == 0) {
      Unmap(GranuleAddress(g), granularity_, granules_[g].handle);
      backed_ -= granularity_;
    }
  }

  // The codec's staging area, counted in the budget. REQUIRES: staging_mu_ held.
  Status EnsureStaging() {
    if (staging_ != nullptr) return Status::Ok();
    const uint64_t bytes = cuda::ZeroBlockStaging::DeviceBytes();
    if (backed_ + bytes > budget_) return Exhausted(bytes);
    OnDevice on(engine_->device());
    if (on.status() != cudaSuccess) return RuntimeError(on.status(), "cudaSetDevice");
    auto staging = std::make_unique<cuda::ZeroBlockStaging>();
    SEEDANCE_RETURN_IF_ERROR(staging->Init());
    staging_ = std::move(staging);
    backed_ += bytes;
    return Status::Ok();
  }

  Status Exhausted(uint64_t size) const {
    return ResourceExhaustedError(name_ + ": " + std::to_string(size) + " bytes over the budget (" +
                                  std::to_string(backed_) + " of " + std::to_string(budget_) +
                                  " used)");
  }

  std::string name_ = "cuda-device";
  std::shared_ptr<CopyEngine> engine_;
  Driver driver_;
  uint64_t budget_;
  uint64_t small_range_;
  std::vector<int> peers_;
  bool posix_fd_;
  CUmemAllocationProp prop_{};
  std::vector<CUmemAccessDesc> access_;
  uint64_t granularity_ = 2 << 20;
  uint64_t backed_ = 0;
  std::unordered_map<CUdeviceptr, Block> blocks_;  // blocks with their own range
  CUdeviceptr small_base_ = 0;
  SubAllocator small_alloc_;
  std::vector<Granule> granules_;
  std::unordered_map<uint64_t, uint64_t> small_sizes_;  // offset → size
  // The zero-block codec's staging (null until the first encoded move); one move at a time
  // uses it (the copy worker and a stall may both run the codec).
  std::mutex staging_mu_;
  std::unique_ptr<cuda::ZeroBlockStaging> staging_;
};

class CudaPinnedTier final : public Tier {
 public:
  CudaPinnedTier(std::shared_ptr<CopyEngine> engine, uint64_t capacity)
      : engine_(std::move(engine)), alloc_(capacity) {}
  ~CudaPinnedTier() override {
    OnDevice on(engine_->device());
    if (arena_ != nullptr) cudaFreeHost(arena_);
  }
  Status Init() {
    OnDevice on(engine_->device());
    cudaError_t e = cudaHostAlloc(&arena_, alloc_.capacity(), cudaHostAllocPortable);
    return e == cudaSuccess ? Status::Ok() : RuntimeError(e, "cudaHostAlloc (pinned tier)");
  }
  const std::string& name() const override { return name_; }
  bool CanCopyFrom(const Tier&) const override { return true; }
  uint64_t capacity() const override { return alloc_.capacity(); }
  uint64_t used() const override { return alloc_.used(); }
  double fragmentation() const override { return alloc_.Fragmentation(); }
  Result<void*> Allocate(uint64_t size) override {
    auto off = alloc_.Allocate(size);
    if (!off) {
      return ResourceExhaustedError(name_ + ": no free block of " + std::to_string(size) +
                                    " bytes");
    }
    return static_cast<void*>(static_cast<char*>(arena_) + *off);
  }
  // A pinned block's last copy was waited for: nothing still reads or writes it.
  void Free(void* p) override {
    alloc_.Free(static_cast<uint64_t>(static_cast<char*>(p) - static_cast<char*>(arena_)));
  }
  Status CopyFrom(void* dst, const void* src, uint64_t size, const Tier& from,
                  CopyUrgency urgency) override {
    return engine_->Copy(
        dst, src, size,
        urgency == CopyUrgency::kWaited ? CopyEngine::kDownWaited : CopyEngine::kDownBackground,
        from.memory() == MemoryKind::kDevice);
  }

 private:
  std::string name_ = "cuda-pinned";
  std::shared_ptr<CopyEngine> engine_;
  void* arena_ = nullptr;
  SubAllocator alloc_;
};

}  // namespace

Result<std::vector<std::unique_ptr<Tier>>> MakeCudaTiers(const CudaTierOptions& o) {
  if (o.device_budget == 0 || o.pinned_capacity == 0) {
    return InvalidArgumentError("device_budget and pinned_capacity must be set");
  }
  SEEDANCE_RETURN_IF_ERROR(cuda::CheckDriverVersion());
  int count = 0;
  cudaError_t e = cudaGetDeviceCount(&count);
  if (e != cudaSuccess) return RuntimeError(e, "no usable device");
  if (o.device < 0 || o.device >= count) {
    return UnavailableError("CUDA device " + std::to_string(o.device) + " does not exist (" +
                            std::to_string(count) + " found)");
  }
  Driver driver;
  {
    OnDevice on(o.device);
    if (on.status() != cudaSuccess) return RuntimeError(on.status(), "cudaSetDevice");
    (void)cudaFree(nullptr);  // the primary context exists from here on
    SEEDANCE_RETURN_IF_ERROR(driver.Load());
    SEEDANCE_RETURN_IF_ERROR(driver.CheckDevice(o.device, o.posix_fd_handles));
  }
  auto engine = std::make_shared<CopyEngine>(o.device, o.capture_safe);
  SEEDANCE_RETURN_IF_ERROR(engine->Init());
  auto device = std::make_unique<CudaDeviceTier>(engine, driver, o);
  SEEDANCE_RETURN_IF_ERROR(device->Init());
  auto pinned = std::make_unique<CudaPinnedTier>(engine, o.pinned_capacity);
  SEEDANCE_RETURN_IF_ERROR(pinned->Init());
  std::vector<std::unique_ptr<Tier>> tiers;
  tiers.push_back(std::move(device));
  tiers.push_back(std::move(pinned));
  return Result<std::vector<std::unique_ptr<Tier>>>(std::move(tiers));
}

}  // namespace seedance::trim
