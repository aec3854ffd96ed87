#include "core/delivery/durable_batch_source.h"

#include <cstring>

namespace seedance::delivery {

DurableBatchSource::DurableBatchSource(std::unique_ptr<storage::SinkCursor> cursor,
                                       const Routing& routing, governor::MemoryBudget* budget,
                                       ComponentStats& stats)
    : cursor_(std::move(cursor)),
      routing_(routing),
      budget_(budget),
      stats_(stats),
      read_errors_(stats.registry().GetCounter(
          "seedance_queue_read_errors_total",
          "Reads of the durable queue that failed (a segment not opened or not read: out of "
          "descriptors, EIO); retried, nothing skipped.",
          {{"component", cursor_ ? cursor_->name() : std::string()}})) {}

void DurableBatchSource::NoteReadError(int err) {
  const std::string& name = cursor_->name();
  uint64_t suppressed = 0;
  if (err == 0) {
    if (read_failing_ && read_log_.Allow("recovered", &suppressed)) {
      SEEDANCE_LOG_INFO(name, "reading the durable queue again");
    }
    read_failing_ = false;
    return;
  }
  read_failing_ = true;
  read_errors_.Add();
  if (read_log_.Allow("failed", &suppressed)) {
    SEEDANCE_LOG_WARN(name,
                      "cannot read the durable queue: {}; trying again every {} ms, nothing is "
                      "skipped{}",
                      std::strerror(err), kReadRetry.count(),
                      suppressed > 0 ? fmt::format(" ({} more failures)", suppressed) : "");
  }
}

bool DurableBatchSource::Admits(size_t open_jobs, size_t batch_events) const {
  if (budget_ == nullptr || open_jobs == 0) return true;  // always make progress
  if (probing_) return false;
  return budget_->HasRoom(
      governor::MemoryBudget::BatchAdmissionBytes(batch_events, event_bytes_estimate_));
}

bool DurableBatchSource::Take(size_t max_events, std::vector<Event>* events, Lease* lease) {
  if (!cursor_) return false;
  while (true) {
    const size_t returned_before = cursor_->returned();
    uint64_t first = 0, last = 0;
    const bool read = cursor_->Read(max_events, events, &first, &last);
    NoteReadError(cursor_->read_error());
    if (!read) {
      if (!read_failing_) stats_.queue_depth.Set(0);
      return false;
    }
    const bool read_again = cursor_->returned() < returned_before;
    stats_.queue_depth.Set(static_cast<int64_t>(cursor_->Backlog()));
    if (routing_.Filters()) {
      std::erase_if(*events, [this](const Event& e) { return !routing_.Wants(e); });
    }
    if (events->empty()) {  // only records for other sinks
      cursor_->Done(first, last);
      continue;
    }
    if (!read_again) stats_.events_in.Add(events->size());
    *lease = Lease{.first = first, .last = last, .bytes = 0};
    if (budget_) {
      uint64_t event_bytes = 0;
      for (const Event& e : *events) event_bytes += e.MemoryBytes();
      event_bytes_estimate_ = event_bytes / events->size();
      lease->bytes = governor::MemoryBudget::BatchChargeBytes(event_bytes);
      budget_->Charge(lease->bytes);
      if (read_again) budget_->CountRestored(lease->bytes);
    }
    return true;
  }
}

void DurableBatchSource::Credit(const Lease& lease) {
  if (budget_) budget_->Credit(lease.bytes);
}

void DurableBatchSource::Delivered(const Lease& lease, bool delivered_any) {
  Credit(lease);
  if (delivered_any) probing_ = false;  // the sink is ready
  if (cursor_) cursor_->Done(lease.first, lease.last);
}

void DurableBatchSource::ShutDown(const Lease& lease, size_t) { Credit(lease); }

void DurableBatchSource::Evicted(const Lease& lease) {
  Credit(lease);
  if (cursor_) cursor_->Return(lease.first, lease.last);
  probing_ = true;
}

size_t DurableBatchSource::Stop() {
  if (cursor_) cursor_->Save();
  return 0;
}

void DurableBatchSource::Detach() {
  if (!cursor_) return;
  cursor_->Save();
  cursor_.reset();
}

}  // namespace seedance::delivery
