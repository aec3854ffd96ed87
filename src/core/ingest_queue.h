// IngestQueue: the bounded queue from sources (event loop) to the processing thread.
//
// Sources never block: TryPush fails when full and the source waits for WhenWritable, which
// fires once the processing thread has drained the queue below half its capacity. Pushes
// wake the processing thread once per turn of the event loop, after the handler that pushed
// (e.g. one socket read's worth of messages) has finished: one wake-up per batch, not one
// per event. With a
// memory budget the queue also holds at most `max_bytes` of events (charged to the budget
// from push to pop).
// Thread-safe.
#pragma once

#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <vector>

#include "governor/memory_budget.h"
#include "seedance/event.h"
#include "seedance/source.h"
#include "util/event_loop.h"
#include "util/loop_signal.h"
#include "util/ring_queue.h"

namespace seedance {

struct IngestItem {
  Event event;
  AckHandle ack;
  uint64_t bytes = 0;   // charged to the memory budget
  std::string invalid;  // why the source could not take this input (routed to `error`)
};

class IngestQueue {
 public:
  IngestQueue(size_t capacity, EventLoop& loop, governor::MemoryBudget* budget = nullptr,
              uint64_t max_bytes = 0)
      : capacity_(capacity),
        loop_(loop),
        budget_(budget),
        max_bytes_(max_bytes),
        wake_(loop.io(), [this] { cv_.notify_one(); }) {}

  // Moves `event` in and returns true, or returns false (event untouched) when full or closed.
  bool TryPush(Event& event, AckHandle ack, std::string_view invalid = {});
  // Moves all of `events` in (event i acknowledged to `owner` with `first_token + i`) and
  // returns true, or returns false with none taken when there is no room for all of them.
  // Event i: token first_token + i; with a `stream`, its end first_end + i + 1. A batch that
  // does not fit beside what is queued still enters once the queue has drained to half, when
  // single events would be let in again: a large batch (a scraped page, bounded by
  // max_samples) is neither refused for ever nor starved by other sources.
  bool TryPushAll(std::vector<Event>& events, Acknowledger* owner, uint64_t first_token,
                  uint32_t stream = 0, uint64_t first_end = 0);
  // Runs `callback` on the event loop once there is room again (at once if there is now).
  void WhenWritable(std::function<void()> callback) { WhenRoomFor(1, std::move(callback)); }
  // Runs `callback` on the event loop once TryPushAll of `events` events may succeed: at once
  // if it may now, else once the queue has drained to half.
  void WhenRoomFor(size_t events, std::function<void()> callback);
  // Waits up to `timeout` for items and moves up to `max` of them into `out`. Returns false
  // once the queue is closed and empty.
  bool PopBatch(std::vector<IngestItem>& out, size_t max, std::chrono::milliseconds timeout);
  // No more pushes; PopBatch drains what is left, then returns false.
  void Close();
  size_t size() const;
  size_t capacity() const { return capacity_; }
  // Items pushed since the queue was made (ProcessingLoop::handled() catches up with it).
  uint64_t pushed() const {
    std::lock_guard<std::mutex> lock(mu_);
    return pushed_;
  }

 private:
  const size_t capacity_;
  EventLoop& loop_;
  governor::MemoryBudget* const budget_;
  const uint64_t max_bytes_;
  uint64_t bytes_ = 0;
  uint64_t pushed_ = 0;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  util::RingQueue<IngestItem> items_;
  // Whether a batch of `events` may enter now (TryPushAll), and whether waiters are woken (the
  // queue drained to half: one wake-up per half queue, not one per event).
  bool Fits(size_t events) const;
  bool Wakes() const;

  std::vector<std::function<void()>> waiters_;
  bool closed_ = false;
  // Wakes the processing thread after the current event-loop handler (coalesced).
  util::LoopSignal wake_;
};

}  // namespace seedance
