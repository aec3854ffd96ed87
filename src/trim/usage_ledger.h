// UsageLedger: which of TierManager's buffers are in use, the step each was last used, and
// the bytes that have been idle for `idle_steps` (the policy's idle share). Incremental: a
// buffer used at step s becomes idle at s + idle_steps unless used again; Age() counts those
// whose time has come, looking only at the due ones.
#pragma once

#include <cstdint>
#include <deque>
#include <unordered_map>
#include <utility>

namespace seedance::trim {

class UsageLedger {
 public:
  explicit UsageLedger(uint64_t idle_steps) : idle_steps_(idle_steps) {}

  // A buffer of `size` bytes registered at `step`: not in use, last used then.
  void Add(uint64_t id, uint64_t size, uint64_t step);
  void Remove(uint64_t id);
  // Acquired at `step`: in use until released, so never idle meanwhile.
  void Acquire(uint64_t id, uint64_t step);
  // Released at `step`: not idle before step + idle_steps.
  void Release(uint64_t id, uint64_t step);
  // Used at `step` without being acquired (brought back for a use expected now): not idle
  // before step + idle_steps; in use or not as it was.
  void Touch(uint64_t id, uint64_t step);
  // Counts the buffers whose idle time has come by `step`.
  void Age(uint64_t step);

  bool in_use(uint64_t id) const { return entries_.at(id).in_use; }
  uint64_t last_used(uint64_t id) const { return entries_.at(id).last_used; }
  // Not in use, and not used for idle_steps by `step` (counted or not yet aged).
  bool IdleAt(uint64_t id, uint64_t step) const;
  uint64_t idle_bytes() const { return idle_bytes_; }
  uint64_t registered_bytes() const { return registered_bytes_; }
  // idle_bytes / registered_bytes (0 with nothing registered).
  double idle_share() const;

 private:
  struct Entry {
    uint64_t size = 0;
    uint64_t last_used = 0;
    bool in_use = false;
    bool counted = false;  // its bytes are in idle_bytes_
  };
  void Uncount(Entry& e);

  uint64_t idle_steps_;
  std::unordered_map<uint64_t, Entry> entries_;
  std::deque<std::pair<uint64_t, uint64_t>> due_;  // (step, id), in step order
  uint64_t idle_bytes_ = 0;
  uint64_t registered_bytes_ = 0;
};

}  // namespace seedance::trim
