#include "trim/usage_ledger.h"

namespace seedance::trim {

void UsageLedger::Add(uint64_t id, uint64_t size, uint64_t step) {
  entries_[id] = Entry{.size = size, .last_used = step};
  registered_bytes_ += size;
  due_.emplace_back(step + idle_steps_, id);
}

void UsageLedger::Remove(uint64_t id) {
  auto it = entries_.find(id);
  if (it == entries_.end()) return;
  Uncount(it->second);
  registered_bytes_ -= it->second.size;
  entries_.erase(it);  // its entries in due_ are skipped when they come
}

void UsageLedger::Acquire(uint64_t id, uint64_t step) {
  Entry& e = entries_.at(id);
  e.in_use = true;
  e.last_used = step;
  Uncount(e);
}

void UsageLedger::Release(uint64_t id, uint64_t step) {
  entries_.at(id).in_use = false;
  Touch(id, step);
}

void UsageLedger::Touch(uint64_t id, uint64_t step) {
  Entry& e = entries_.at(id);
  e.last_used = step;
  Uncount(e);
  due_.emplace_back(step + idle_steps_, id);
}

void UsageLedger::Age(uint64_t step) {
  // Entries are pushed with non-decreasing steps (the manager's step only grows).
  while (!due_.empty() && due_.front().first <= step) {
    auto [due, id] = due_.front();
    due_.pop_front();
    auto it = entries_.find(id);
    if (it == entries_.end()) continue;
    Entry& e = it->second;
    // Stale entries (used again since) are skipped: a later entry exists for them.
    if (e.in_use || e.counted || e.last_used + idle_steps_ != due) continue;
    e.counted = true;
    idle_bytes_ += e.size;
  }
}

bool UsageLedger::IdleAt(uint64_t id, uint64_t step) const {
  const Entry& e = entries_.at(id);
  return !e.in_use && step >= e.last_used + idle_steps_;
}

double UsageLedger::idle_share() const {
  return registered_bytes_ == 0
             ? 0.0
             : static_cast<double>(idle_bytes_) / static_cast<double>(registered_bytes_);
}

void UsageLedger::Uncount(Entry& e) {
  if (!e.counted) return;
  e.counted = false;
  idle_bytes_ -= e.size;
}

}  // namespace seedance::trim
