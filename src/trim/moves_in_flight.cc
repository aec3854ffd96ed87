#include "trim/moves_in_flight.h"

#include <algorithm>

namespace seedance::trim {

void MovesInFlight::Start(uint64_t id, std::shared_ptr<Job> job) {
  jobs_[id] = job;
  order_.push_back(id);
  worker_.Submit(std::move(job));
}

const MovesInFlight::Job* MovesInFlight::Find(uint64_t id) const {
  auto it = jobs_.find(id);
  return it == jobs_.end() ? nullptr : it->second.get();
}

std::shared_ptr<MovesInFlight::Job> MovesInFlight::Settle(uint64_t id) {
  auto it = jobs_.find(id);
  if (it == jobs_.end()) return nullptr;
  std::shared_ptr<Job> job = std::move(it->second);
  jobs_.erase(it);
  order_.erase(std::find(order_.begin(), order_.end(), id));
  worker_.Wait(*job);
  return job;
}

std::vector<std::pair<uint64_t, std::shared_ptr<MovesInFlight::Job>>> MovesInFlight::TakeDone(
    bool wait) {
  std::vector<std::pair<uint64_t, std::shared_ptr<Job>>> done;
  std::vector<uint64_t> still;
  for (uint64_t id : order_) {
    auto it = jobs_.find(id);
    if (wait) worker_.Wait(*it->second);
    if (it->second->done.load()) {
      done.emplace_back(id, std::move(it->second));
      jobs_.erase(it);
    } else {
      still.push_back(id);
    }
  }
  order_.swap(still);
  return done;
}

}  // namespace seedance::trim
