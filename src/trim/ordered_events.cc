#include "trim/ordered_events.h"

namespace seedance::trim {

OrderedEvents::Recorded OrderedEvents::Record(const std::function<bool(size_t)>& passed) {
  Recorded r{.id = next_id_++};
  if (!live_.empty() && passed(live_.front().slot)) {
    passed_through_ = live_.front().id;
    r.slot = live_.front().slot;
    live_.pop_front();
  } else {
    r.slot = slots_++;
    r.new_slot = true;
  }
  live_.push_back(Live{r.id, r.slot});
  return r;
}

std::optional<size_t> OrderedEvents::Find(uint64_t id) const {
  if (id == 0 || id <= passed_through_ || live_.empty() || id < live_.front().id) {
    return std::nullopt;
  }
  const uint64_t index = id - live_.front().id;
  if (index >= live_.size()) return std::nullopt;  // not recorded yet: a caller's mistake
  return live_[index].slot;
}

}  // namespace seedance::trim
