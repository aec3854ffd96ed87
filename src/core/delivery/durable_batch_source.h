// DurableBatchSource: a sink's batches read from the durable queue through its SinkCursor.
// - Routing: a queue record serves every sink, so the records this sink does not take are
//   skipped here (and finished at once).
// - Memory budget (`limits.memory`, optional): the batches handed out are charged while a job
//   holds them; another is admitted only while the budget has room for a full one. A job the
//   governor evicts goes back to the cursor (read again before anything newer), and from then
//   on one job at a time is admitted (the probe) until something is delivered.
// - A job shut down before its outcome is not finished: read again after a restart.
// - A queue segment that cannot be read (the process is out of descriptors, EIO) is read
//   again every kReadRetry, skipping nothing. The failure is logged at most every 10 s (with a
//   count of those not logged), and so is the recovery; seedance_queue_read_errors_total.
// - Detach() (a sink replaced by a reload) saves the position and closes the cursor; the
//   runner that replaces it opens the sink's cursor again from there. Whatever ends after
//   that is only credited to the budget: the new runner reads it again.
#pragma once

#include <memory>

#include "core/delivery/batch_source.h"
#include "core/delivery/routing.h"
#include "governor/memory_budget.h"
#include "observe/component_stats.h"
#include "storage/sink_cursor.h"
#include "util/log.h"

namespace seedance::delivery {

class DurableBatchSource final : public BatchSource {
 public:
  // `routing` must outlive the source; `budget` may be null.
  DurableBatchSource(std::unique_ptr<storage::SinkCursor> cursor, const Routing& routing,
                     governor::MemoryBudget* budget, ComponentStats& stats);

  size_t Waiting() const override { return cursor_ ? cursor_->Backlog() : 0; }
  bool ReadingAgain() const override { return cursor_ && cursor_->returned() > 0; }
  bool Admits(size_t open_jobs, size_t batch_events) const override;
  bool Take(size_t max_events, std::vector<Event>* events, Lease* lease) override;
  std::chrono::milliseconds TakeAgainAfter() const override {
    return read_failing_ ? kReadRetry : std::chrono::milliseconds(0);
  }
  static constexpr std::chrono::milliseconds kReadRetry{500};
  void Delivered(const Lease& lease, bool delivered_any) override;
  void ShutDown(const Lease& lease, size_t events) override;
  bool Evictable() const override { return budget_ != nullptr; }
  void Evicted(const Lease& lease) override;
  void Truncate(std::vector<Event>* events, size_t n) override {
    if (cursor_)
      cursor_->Truncate(events, n);
    else
      events->resize(n);
  }
  size_t Stop() override;
  void Detach() override;

  // Since an eviction, one job at a time until something is delivered (for tests).
  bool probing() const { return probing_; }

 private:
  void Credit(const Lease& lease);
  // The cursor's Read() failed with `err` (0: it did not fail).
  void NoteReadError(int err);

  std::unique_ptr<storage::SinkCursor> cursor_;  // null once detached
  const Routing& routing_;
  governor::MemoryBudget* const budget_;
  ComponentStats& stats_;
  uint64_t event_bytes_estimate_ = 0;  // bytes per event of the last batch (admission)
  bool probing_ = false;
  bool read_failing_ = false;
  observe::Counter& read_errors_;
  util::LogLimiter read_log_;
};

}  // namespace seedance::delivery
