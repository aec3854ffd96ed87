#include "trim/stream_executor.h"

#include <algorithm>
#include <string>

namespace seedance::trim {

StreamExecutor::StreamExecutor(const StreamPlan& plan, std::vector<StreamUnit> units, void* ring,
                               StreamDevice& device, uint64_t alignment)
    : units_(std::move(units)),
      resident_(plan.resident),
      ring_memory_(static_cast<char*>(ring)),
      device_(device),
      ring_(plan.ring_bytes, alignment),
      lookahead_(std::max(1, plan.simulated.lookahead)) {
  for (size_t i = 0; i < units_.size(); ++i) {
    if (!resident_[i]) streamed_.push_back(i);
  }
}

bool StreamExecutor::IssueNext() {
  if (streamed_.empty()) return false;
  const size_t unit = streamed_[issued_ % streamed_.size()];
  auto place = ring_.Place(units_[unit].bytes);
  if (!place) return false;
  const StreamDevice::Event ready = device_.CopyAfter(
      ring_memory_ + place->offset, units_[unit].host, units_[unit].bytes, place->after);
  in_flight_.push_back(InFlight{unit, place->offset, ready});
  ++issued_;
  ++stats_.copies;
  stats_.bytes_copied += units_[unit].bytes;
  return true;
}

void StreamExecutor::IssueAhead() {
  while (issued_ < begun_streamed_ + static_cast<uint64_t>(lookahead_) && IssueNext()) {
  }
}

Result<void*> StreamExecutor::Begin(size_t i) {
  SEEDANCE_RETURN_IF_ERROR(device_.Health());
  if (i != expected_ || begun_) {
    ++stats_.order_misses;
    return FailedPreconditionError(
        "stream executor: unit " + std::to_string(i) + " began, the plan expects " +
        (begun_ ? "the end of unit " : "unit ") + std::to_string(expected_) +
        " (the order changed: record the iteration again)");
  }
  begun_ = true;
  if (resident_[i]) return units_[i].resident;
  // Its copy: issued ahead, or now (every unit before it has ended, so the ring has room).
  if (issued_ == begun_streamed_) {
    ++stats_.issued_at_begin;
    if (!IssueNext()) {
      begun_ = false;
      return ResourceExhaustedError("stream executor: unit " + std::to_string(i) + " of " +
                                    std::to_string(units_[i].bytes) +
                                    " bytes does not fit the ring");
    }
  }
  const InFlight& mine = in_flight_.front();  // every unit before it has ended
  device_.ComputeWaits(mine.ready);
  ++begun_streamed_;
  IssueAhead();
  stats_.most_ahead = std::max(stats_.most_ahead, static_cast<int>(issued_ - begun_streamed_));
  SEEDANCE_RETURN_IF_ERROR(device_.Health());
  return static_cast<void*>(ring_memory_ + mine.offset);
}

Status StreamExecutor::End(size_t i) {
  if (i != expected_ || !begun_) {
    ++stats_.order_misses;
    return FailedPreconditionError("stream executor: unit " + std::to_string(i) +
                                   " ended, but it is not the unit that began");
  }
  begun_ = false;
  expected_ = (i + 1) % units_.size();
  if (resident_[i]) return Status::Ok();
  ring_.ReleaseOldest(device_.RecordCompute());
  in_flight_.pop_front();
  IssueAhead();
  return device_.Health();
}

}  // namespace seedance::trim
