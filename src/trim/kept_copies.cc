#include "trim/kept_copies.h"

namespace seedance::trim {

void KeptCopies::Keep(uint64_t id, KeptCopy copy) {
  bytes_ += copy.bytes();
  copies_[id] = copy;
}

const KeptCopy* KeptCopies::Find(uint64_t id) const {
  auto it = copies_.find(id);
  return it == copies_.end() ? nullptr : &it->second;
}

std::optional<KeptCopy> KeptCopies::Take(uint64_t id) {
  auto it = copies_.find(id);
  if (it == copies_.end()) return std::nullopt;
  KeptCopy copy = it->second;
  bytes_ -= copy.bytes();
  copies_.erase(it);
  return copy;
}

std::optional<KeptCopy> KeptCopies::TakeOneOn(int tier) {
  for (const auto& [id, copy] : copies_) {
    if (copy.tier == tier) return Take(id);
  }
  return std::nullopt;
}

}  // namespace seedance::trim
