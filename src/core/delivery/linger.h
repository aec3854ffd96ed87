// Linger (`batch_linger`): whether a batch smaller than batch_size waits for more events, and
// until when. Pure: the runner reports since when events wait and asks before taking a batch;
// it arms a timer for the time returned.
//
// The linger counts from when events started waiting: their arrival when known (the time an
// event spent in processing and in the durable queue is part of the linger, not added to it),
// and also behind a full concurrency limit, so a batch that waited for a free slot longer than
// the linger leaves at once. Full batches, events taken again (evicted) and shutdown never
// wait.
#pragma once

#include <chrono>
#include <cstddef>
#include <optional>

namespace seedance::delivery {

class Linger {
 public:
  using Clock = std::chrono::steady_clock;

  explicit Linger(Clock::duration linger) : linger_(linger) {}
  bool enabled() const { return linger_.count() > 0; }

  // Events wait, the oldest of them since `since`.
  void NoteWaiting(Clock::time_point since) {
    if (!waiting_since_ || since < *waiting_since_) waiting_since_ = since;
  }
  // With `waiting` events and room for `max_events` in a batch: nothing when the batch leaves
  // now, else the time it leaves at unless it fills first. `urgent`: events taken again, or
  // shutdown.
  std::optional<Clock::time_point> HoldUntil(size_t waiting, size_t max_events, bool urgent,
                                             Clock::time_point now);

 private:
  const Clock::duration linger_;
  std::optional<Clock::time_point> waiting_since_;  // none: nothing waits
};

}  // namespace seedance::delivery
