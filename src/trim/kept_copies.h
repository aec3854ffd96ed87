// KeptCopies: the copies TierManager keeps of buffers it brought back to the fast tier. The
// move back leaves the bytes on the slower tier; while the buffer is only read (AcquireRead)
// they stay valid, so moving it down again needs no copy (TierManager counts those bytes as
// bytes_down_without_copy). A write makes the copy stale; the manager then drops it, and a
// slower tier short of room drops one to make room. The ledger holds the copies' addresses,
// not their memory: whoever takes one frees it on its tier.
#pragma once

#include <cstdint>
#include <optional>
#include <unordered_map>
#include <utility>

namespace seedance::trim {

struct KeptCopy {
  void* ptr = nullptr;
  int tier = 0;
  uint64_t size = 0;     // the buffer's size
  uint64_t encoded = 0;  // the copy is its zero-block encoding of this many bytes (0: plain)
  uint64_t bytes() const { return encoded != 0 ? encoded : size; }  // what it holds on its tier
};

class KeptCopies {
 public:
  // REQUIRES: no copy kept for `id`.
  void Keep(uint64_t id, KeptCopy copy);
  const KeptCopy* Find(uint64_t id) const;
  // Detaches the copy of `id`, if any.
  std::optional<KeptCopy> Take(uint64_t id);
  // Detaches one copy on `tier`, if any.
  std::optional<KeptCopy> TakeOneOn(int tier);
  uint64_t bytes() const { return bytes_; }  // held on the slower tiers, all copies
  size_t size() const { return copies_.size(); }

 private:
  std::unordered_map<uint64_t, KeptCopy> copies_;
  uint64_t bytes_ = 0;
};

}  // namespace seedance::trim
