// AddressKeepingHostTier: RAM blocks that keep their address across moves (see
// MakeAddressKeepingHostTier in seedance/trim.h), the host twin of the CUDA device tier.
//
// Each block is its own anonymous mapping, rounded up to whole pages. Evict gives the pages
// back (MADV_DONTNEED: the next touch would read zeros) and removes access (PROT_NONE), so
// the block costs no memory while its contents live on a slower tier and any stray access
// faults at once instead of reading stale bytes. Restore gives access back and faults the pages
// in, so the copy back runs at memory bandwidth. used() is the bytes of backed pages.
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <unordered_map>

#include "seedance/trim.h"
#include "trim/parallel_copy.h"

namespace seedance::trim {
namespace {

uint64_t PageSize() {
  static const uint64_t page = static_cast<uint64_t>(::sysconf(_SC_PAGESIZE));
  return page;
}

class AddressKeepingHostTier final : public Tier {
 public:
  AddressKeepingHostTier(std::string name, uint64_t capacity)
      : name_(std::move(name)), capacity_(capacity) {}
  ~AddressKeepingHostTier() override {
    for (auto& [p, b] : blocks_) ::munmap(p, b.size);
  }

  const std::string& name() const override { return name_; }
  uint64_t capacity() const override { return capacity_; }
  uint64_t used() const override { return backed_; }
  double fragmentation() const override { return 0; }  // every block is its own mapping

  Result<void*> Allocate(uint64_t size) override {
    const uint64_t rounded = Round(size);
    if (backed_ + rounded > capacity_) return Exhausted(rounded);
    void* p = ::mmap(nullptr, rounded, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) {
      return ResourceExhaustedError(name_ + ": mmap of " + std::to_string(rounded) +
                                    " bytes failed: " + std::strerror(errno));
    }
    Populate(p, rounded);
    blocks_[p] = Block{rounded, true};
    backed_ += rounded;
    return p;
  }

  void Free(void* p) override {
    auto it = blocks_.find(p);
    if (it == blocks_.end()) return;
    if (it->second.backed) backed_ -= it->second.size;
    ::munmap(p, it->second.size);
    blocks_.erase(it);
  }

  Status CopyFrom(void* dst, const void* src, uint64_t size, const Tier&,
                  CopyUrgency urgency) override {
    ParallelCopy(dst, src, size, urgency == CopyUrgency::kWaited ? 2 : 1);
    return Status::Ok();
  }

  bool KeepsAddress(const void* p) const override {
    return blocks_.count(const_cast<void*>(p)) != 0;
  }

  Status Evict(void* p) override {
    auto it = blocks_.find(p);
    if (it == blocks_.end() || !it->second.backed) {
      return FailedPreconditionError(name_ + ": evict: not a backed block");
    }
    if (::madvise(p, it->second.size, MADV_DONTNEED) != 0 ||
        ::mprotect(p, it->second.size, PROT_NONE) != 0) {
      return InternalError(name_ + ": evict: " + std::strerror(errno));
    }
    it->second.backed = false;
    backed_ -= it->second.size;
    return Status::Ok();
  }

  Status Restore(void* p) override {
    auto it = blocks_.find(p);
    if (it == blocks_.end() || it->second.backed) {
      return FailedPreconditionError(name_ + ": restore: not an evicted block");
    }
    if (backed_ + it->second.size > capacity_) return Exhausted(it->second.size);
    if (::mprotect(p, it->second.size, PROT_READ | PROT_WRITE) != 0) {
      return InternalError(name_ + ": restore: " + std::strerror(errno));
    }
    Populate(p, it->second.size);
    it->second.backed = true;
    backed_ += it->second.size;
    return Status::Ok();
  }

 private:
  struct Block {
    uint64_t size;  // whole pages
    bool backed;
  };

  static uint64_t Round(uint64_t size) {
    const uint64_t page = PageSize();
    return (std::max<uint64_t>(size, 1) + page - 1) / page * page;
  }
  // Faults the pages in now (before Linux 5.14: by touching them).
  static void Populate(void* p, uint64_t size) {
    if (::madvise(p, size, MADV_POPULATE_WRITE) != 0) {
      for (uint64_t off = 0; off < size; off += PageSize()) static_cast<volatile char*>(p)[off] = 0;
    }
  }
  Status Exhausted(uint64_t size) const {
    return ResourceExhaustedError(name_ + ": " + std::to_string(size) +
                                  " bytes over the capacity (" + std::to_string(backed_) + " of " +
                                  std::to_string(capacity_) + " used)");
  }

  std::string name_;
  uint64_t capacity_;
  uint64_t backed_ = 0;
  std::unordered_map<void*, Block> blocks_;
};

}  // namespace

std::unique_ptr<Tier> MakeAddressKeepingHostTier(std::string name, uint64_t capacity) {
  return std::make_unique<AddressKeepingHostTier>(std::move(name), capacity);
}

}  // namespace seedance::trim
