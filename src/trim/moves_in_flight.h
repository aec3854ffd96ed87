// MovesInFlight: the moves TierManager runs in the background (PolicyOptions::async_copies),
// at most one per buffer, on its CopyWorker in the order they were started. The manager starts
// a move and goes on; it completes the move when it finds it done (TakeDone), or settles it
// at once, waiting, when the buffer is needed (Settle). A detached job is the caller's to
// complete or undo.
#pragma once

#include <cstdint>
#include <memory>
#include <unordered_map>
#include <utility>
#include <vector>

#include "trim/copy_worker.h"

namespace seedance::trim {

class MovesInFlight {
 public:
  using Job = CopyWorker::Job;

  // REQUIRES: no move in flight for `id`.
  void Start(uint64_t id, std::shared_ptr<Job> job);
  // The move in flight for `id`, nullptr when none.
  const Job* Find(uint64_t id) const;
  // Waits for the move of `id` and detaches it; nullptr when none.
  std::shared_ptr<Job> Settle(uint64_t id);
  // Detaches the moves that are done, in the order they were started; with `wait`, all of
  // them, waiting for each.
  std::vector<std::pair<uint64_t, std::shared_ptr<Job>>> TakeDone(bool wait);
  bool empty() const { return jobs_.empty(); }
  size_t size() const { return jobs_.size(); }

 private:
  std::unordered_map<uint64_t, std::shared_ptr<Job>> jobs_;
  std::vector<uint64_t> order_;  // the ids in jobs_, as started
  CopyWorker worker_;            // last: runs what is queued and joins before the jobs go
};

}  // namespace seedance::trim
