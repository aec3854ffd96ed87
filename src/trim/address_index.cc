#include "trim/address_index.h"

namespace seedance::trim {

void AddressIndex::Insert(const void* begin, uint64_t bytes, uint64_t id) {
  entries_[reinterpret_cast<uintptr_t>(begin)] = Entry{bytes, id};
}

void AddressIndex::Erase(const void* begin) { entries_.erase(reinterpret_cast<uintptr_t>(begin)); }

std::optional<uint64_t> AddressIndex::Find(const void* p) const {
  const auto a = reinterpret_cast<uintptr_t>(p);
  auto it = entries_.upper_bound(a);
  if (it == entries_.begin()) return std::nullopt;
  --it;
  if (a - it->first >= it->second.bytes) return std::nullopt;
  return it->second.id;
}

}  // namespace seedance::trim
