// AddressIndex: which buffer holds an address (TierManager::Lookup). Each buffer is entered at
// one address with the bytes there (its fast-tier or kept address, or its block on a slower
// tier: the encoding's length when it lies there encoded); an address inside [begin, begin +
// bytes) finds it. Entries do not overlap (they are distinct allocations); the caller erases a
// buffer's entry before it moves and enters it again after.
#pragma once

#include <cstdint>
#include <map>
#include <optional>

namespace seedance::trim {

class AddressIndex {
 public:
  void Insert(const void* begin, uint64_t bytes, uint64_t id);
  void Erase(const void* begin);
  std::optional<uint64_t> Find(const void* p) const;
  size_t size() const { return entries_.size(); }

 private:
  struct Entry {
    uint64_t bytes;
    uint64_t id;
  };
  std::map<uintptr_t, Entry> entries_;  // by begin
};

}  // namespace seedance::trim
