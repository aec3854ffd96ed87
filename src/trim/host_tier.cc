// HostTier: a RAM arena of fixed capacity placed by the SubAllocator (see seedance/trim.h).
// The arena is faulted in at creation, like pinned memory: a move then copies at memory
// bandwidth instead of paying a page fault per 4 KiB on the trim path. It asks for huge pages
// (MADV_HUGEPAGE; used where transparent huge pages are "madvise" or "always"): with 4 KiB
// pages, a program reading its buffers line by line misses the TLB every 64 lines, and how
// much that costs depends on where the pages happen to lie — two identical runs in one
// process differed by up to 10% in bench/run trim's A/A control; with huge pages, by ~1%.
#include <sys/mman.h>

#include <algorithm>
#include <memory>
#include <new>
#include <unordered_map>

#include "seedance/trim.h"
#include "trim/parallel_copy.h"
#include "trim/sub_allocator.h"

namespace seedance::trim {
namespace {

class HostTier final : public Tier {
 public:
  HostTier(std::string name, uint64_t capacity, int copy_threads)
      : name_(std::move(name)), copy_threads_(copy_threads), alloc_(capacity) {
    mapped_ = std::max<uint64_t>(capacity, 1);
    void* p = ::mmap(nullptr, mapped_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) throw std::bad_alloc();
    (void)::madvise(p, mapped_, MADV_HUGEPAGE);             // a hint: without THP, 4 KiB pages
    if (::madvise(p, mapped_, MADV_POPULATE_WRITE) != 0) {  // before Linux 5.14: touch them
      for (uint64_t off = 0; off < mapped_; off += 4096) static_cast<volatile char*>(p)[off] = 0;
    }
    arena_ = static_cast<char*>(p);
  }
  ~HostTier() override { ::munmap(arena_, mapped_); }

  const std::string& name() const override { return name_; }
  uint64_t capacity() const override { return alloc_.capacity(); }
  uint64_t used() const override { return alloc_.used(); }
  double fragmentation() const override { return alloc_.Fragmentation(); }

  Result<void*> Allocate(uint64_t size) override {
    auto off = alloc_.Allocate(size);
    if (!off)
      return ResourceExhaustedError(name_ + ": no free block of " + std::to_string(size) +
                                    " bytes");
    return static_cast<void*>(arena_ + *off);
  }
  void Free(void* p) override {
    alloc_.Free(static_cast<uint64_t>(static_cast<char*>(p) - arena_));
  }
  Status CopyFrom(void* dst, const void* src, uint64_t size, const Tier&,
                  CopyUrgency urgency) override {
    // Both sides are host memory. A background copy keeps to one thread: the program computes.
    ParallelCopy(dst, src, size, urgency == CopyUrgency::kWaited ? copy_threads_ : 1);
    return Status::Ok();
  }

 private:
  std::string name_;
  int copy_threads_;
  char* arena_ = nullptr;
  uint64_t mapped_ = 0;
  SubAllocator alloc_;
};

}  // namespace

std::unique_ptr<Tier> MakeHostTier(std::string name, uint64_t capacity, int copy_threads) {
  return std::make_unique<HostTier>(std::move(name), capacity, copy_threads);
}

}  // namespace seedance::trim
