// SubAllocator: places buffers inside one contiguous range (a slab, a host arena), best fit
// with coalescing of free neighbours, every block aligned to `alignment` (256 B).
//
// It manages offsets only; the caller owns the memory. Fragmentation is
// 1 − largest free block / total free bytes (0 when nothing is free), the measure the
// trimming policy's fragmentation trigger reads.
// Thread-compatible.
#pragma once

#include <cstdint>
#include <map>
#include <optional>

namespace seedance::trim {

class SubAllocator {
 public:
  explicit SubAllocator(uint64_t capacity, uint64_t alignment = 256);

  // Offset of a free block of at least `size` bytes (rounded up to the alignment): the
  // smallest that fits, lowest offset among equals. nullopt when none fits.
  std::optional<uint64_t> Allocate(uint64_t size);
  // Frees the block at `offset`. REQUIRES: returned by Allocate and not freed since.
  void Free(uint64_t offset);

  uint64_t capacity() const { return capacity_; }
  uint64_t used() const { return used_; }
  uint64_t free_bytes() const { return capacity_ - used_; }
  uint64_t largest_free() const;
  double Fragmentation() const;
  size_t free_blocks() const { return free_by_offset_.size(); }

 private:
  uint64_t Round(uint64_t size) const { return (size + alignment_ - 1) / alignment_ * alignment_; }
  void InsertFree(uint64_t offset, uint64_t size);
  void EraseFree(std::map<uint64_t, uint64_t>::iterator it);

  uint64_t capacity_;
  uint64_t alignment_;
  uint64_t used_ = 0;
  std::map<uint64_t, uint64_t> free_by_offset_;     // offset → size
  std::multimap<uint64_t, uint64_t> free_by_size_;  // size → offset
  std::map<uint64_t, uint64_t> allocated_;          // offset → size
};

}  // namespace seedance::trim
