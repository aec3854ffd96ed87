// MemoryBatchSource: the bounded queue of a sink in memory mode (queue.durable off). The
// processing thread pushes into it and waits while it is full: that is how backpressure
// reaches the sources. What it holds is lost at shutdown (counted as dropped).
#pragma once

#include <chrono>
#include <condition_variable>
#include <deque>
#include <mutex>

#include "core/delivery/batch_source.h"
#include "observe/component_stats.h"

namespace seedance::delivery {

class MemoryBatchSource final : public BatchSource {
 public:
  MemoryBatchSource(size_t capacity, ComponentStats& stats);

  // Any thread (these three take the source's own lock, never the runner's): queues `event`,
  // waiting while the queue is full unless `deadline` or the shutdown deadline passes, or the
  // source stopped (then it queues anyway: shutdown must not deadlock).
  void Push(Event&& event, std::chrono::steady_clock::time_point deadline);
  // Queues `event` without waiting (side outputs raised on the event loop).
  void PushNoWait(Event&& event);
  // From now on Push() waits no later than `deadline`.
  void SetShutdownDeadline(std::chrono::steady_clock::time_point deadline);

  size_t Waiting() const override;
  bool Take(size_t max_events, std::vector<Event>* events, Lease* lease) override;
  void Delivered(const Lease&, bool) override {}
  void ShutDown(const Lease& lease, size_t events) override;
  size_t Stop() override;

 private:
  void Queue(Event&& event);  // REQUIRES: mu_ held

  const size_t capacity_;
  ComponentStats& stats_;
  mutable std::mutex mu_;
  std::condition_variable space_cv_;
  std::deque<Event> queue_;
  std::chrono::steady_clock::time_point shutdown_deadline_ =
      std::chrono::steady_clock::time_point::max();
  bool stopped_ = false;
};

}  // namespace seedance::delivery
