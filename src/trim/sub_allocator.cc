#include "trim/sub_allocator.h"

#include <iterator>

namespace seedance::trim {

SubAllocator::SubAllocator(uint64_t capacity, uint64_t alignment)
    : capacity_(capacity / alignment * alignment), alignment_(alignment) {
  if (capacity_ > 0) InsertFree(0, capacity_);
}

void SubAllocator::InsertFree(uint64_t offset, uint64_t size) {
  free_by_offset_[offset] = size;
  free_by_size_.emplace(size, offset);
}

void SubAllocator::EraseFree(std::map<uint64_t, uint64_t>::iterator it) {
  auto range = free_by_size_.equal_range(it->second);
  for (auto s = range.first; s != range.second; ++s) {
    if (s->second == it->first) {
      free_by_size_.erase(s);
      break;
    }
  }
  free_by_offset_.erase(it);
}

std::optional<uint64_t> SubAllocator::Allocate(uint64_t size) {
  const uint64_t need = Round(size == 0 ? 1 : size);
  auto best = free_by_size_.lower_bound(need);  // smallest size that fits; lowest offset first
  if (best == free_by_size_.end()) return std::nullopt;
  // Among blocks of the same size, the multimap keeps insertion order; pick the lowest offset.
  uint64_t best_size = best->first;
  uint64_t offset = best->second;
  for (auto it = best; it != free_by_size_.end() && it->first == best_size; ++it) {
    if (it->second < offset) offset = it->second;
  }
  EraseFree(free_by_offset_.find(offset));
  if (best_size > need) InsertFree(offset + need, best_size - need);
  allocated_[offset] = need;
  used_ += need;
  return offset;
}

void SubAllocator::Free(uint64_t offset) {
  auto a = allocated_.find(offset);
  if (a == allocated_.end()) return;
  uint64_t size = a->second;
  allocated_.erase(a);
  used_ -= size;
  // Coalesce with the free neighbours on both sides.
  auto next = free_by_offset_.lower_bound(offset);
  if (next != free_by_offset_.end() && next->first == offset + size) {
    size += next->second;
    EraseFree(next);
  }
  auto after = free_by_offset_.lower_bound(offset);
  if (after != free_by_offset_.begin()) {
    auto prev = std::prev(after);
    if (prev->first + prev->second == offset) {
      offset = prev->first;
      size += prev->second;
      EraseFree(prev);
    }
  }
  InsertFree(offset, size);
}

uint64_t SubAllocator::largest_free() const {
  return free_by_size_.empty() ? 0 : free_by_size_.rbegin()->first;
}

double SubAllocator::Fragmentation() const {
  const uint64_t total = free_bytes();
  if (total == 0) return 0.0;
  return 1.0 - static_cast<double>(largest_free()) / static_cast<double>(total);
}

}  // namespace seedance::trim
