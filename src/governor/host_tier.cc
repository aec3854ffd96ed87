// HostTier: a RAM arena of fixed capacity placed by the SubAllocator (see seedance/trim.h).
#include <cstring>
#include <memory>
#include <unordered_map>

#include "governor/sub_allocator.h"
#include "seedance/trim.h"

namespace seedance::trim {
namespace {

class HostTier final : public Tier {
 public:
  HostTier(std::string name, uint64_t capacity)
      : name_(std::move(name)), arena_(new char[capacity]), alloc_(capacity) {}

  const std::string& name() const override { return name_; }
  uint64_t capacity() const override { return alloc_.capacity(); }
  uint64_t used() const override { return alloc_.used(); }
  double fragmentation() const override { return alloc_.Fragmentation(); }

  Result<void*> Allocate(uint64_t size) override {
    auto off = alloc_.Allocate(size);
    if (!off)
      return ResourceExhaustedError(name_ + ": no free block of " + std::to_string(size) +
                                    " bytes");
    return static_cast<void*>(arena_.get() + *off);
  }
  void Free(void* p) override {
    alloc_.Free(static_cast<uint64_t>(static_cast<char*>(p) - arena_.get()));
  }
  Status CopyFrom(void* dst, const void* src, uint64_t size, const Tier&) override {
    std::memcpy(dst, src, size);  // both sides are host memory
    return Status::Ok();
  }

 private:
  std::string name_;
  std::unique_ptr<char[]> arena_;
  governor::SubAllocator alloc_;
};

}  // namespace

std::unique_ptr<Tier> MakeHostTier(std::string name, uint64_t capacity) {
  return std::make_unique<HostTier>(std::move(name), capacity);
}

}  // namespace seedance::trim
