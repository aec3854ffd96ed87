#include "governor/memory_budget.h"

#include <algorithm>

#include "governor/heap.h"
#include "util/log.h"

namespace seedance::governor {
namespace {

// Victim ids carry their holder in the top 16 bits.
constexpr int kHolderShift = 48;
constexpr uint64_t kLocalMask = (uint64_t{1} << kHolderShift) - 1;

}  // namespace

MemoryBudget::MemoryBudget(MemoryBudgetOptions options, observe::MetricsRegistry& metrics)
    : options_(options),
      queued_capacity_(static_cast<uint64_t>(static_cast<double>(options.capacity) *
                                             (1.0 - options.reserve_share))),
      policy_(options.policy),
      resident_gauge_(metrics.GetGauge("seedance_memory_resident_bytes",
                                       "Resident set size of the process.", {})),
      heap_releases_(metrics.GetCounter("seedance_memory_heap_releases_total",
                                        "Times free heap pages were given back to the system.",
                                        {})),
      used_gauge_(metrics.GetGauge("seedance_memory_bytes",
                                   "Bytes per tier: memory (counted against limits.memory) and "
                                   "disk (the durable queue).",
                                   {{"tier", "memory"}})),
      disk_bytes_(metrics.GetGauge("seedance_memory_bytes", "", {{"tier", "disk"}})),
      moved_to_disk_(metrics.GetCounter("seedance_memory_moved_bytes_total",
                                        "Bytes of batches moved between tiers: evicted from "
                                        "memory (to=disk) and read back (to=memory).",
                                        {{"to", "disk"}})),
      moved_to_memory_(
          metrics.GetCounter("seedance_memory_moved_bytes_total", "", {{"to", "memory"}})),
      evictions_(metrics.GetCounter("seedance_memory_evictions_total",
                                    "Batches whose in-memory copy a trim released.", {})),
      refused_(metrics.GetCounter("seedance_memory_evictions_refused_total",
                                  "Victims their holder could not give back (being sent).", {})),
      trim_seconds_(metrics.GetHistogram("seedance_memory_trim_seconds",
                                         "Time to choose and evict the victims of one trim.", {})),
      metrics_(metrics) {
  metrics.GetGauge("seedance_memory_budget_bytes", "limits.memory.", {})
      .Set(static_cast<int64_t>(options_.capacity));
}

void MemoryBudget::RemoveHolder(BatchHolder* holder) {
  // Keep indexes stable (they are part of victim ids): leave a hole.
  std::replace(holders_.begin(), holders_.end(), holder, static_cast<BatchHolder*>(nullptr));
}

TrimReason MemoryBudget::Step() {
  ++step_;
  used_gauge_.Set(static_cast<int64_t>(used()));
  const auto t0 = std::chrono::steady_clock::now();
  std::vector<BufferState> batches;
  for (size_t i = 0; i < holders_.size(); ++i) {
    if (!holders_[i]) continue;
    const size_t before = batches.size();
    holders_[i]->ListBatches(&batches);
    for (size_t j = before; j < batches.size(); ++j) {
      batches[j].id = (static_cast<uint64_t>(i) << kHolderShift) | (batches[j].id & kLocalMask);
    }
  }
  const TierSample sample{.capacity = queued_capacity_, .used = used(), .fragmentation = 0};
  const TrimReason reason = policy_.Sample(sample, policy_.IdleShare(batches, step_));
  bool trimmed = false;
  if (reason != TrimReason::kNone) trimmed = Trim(reason, batches, t0) > 0;
  MaybeReleaseHeap(trimmed);
  return reason;
}

void MemoryBudget::MaybeReleaseHeap(bool trimmed) {
  const uint64_t resident = ResidentBytes();
  if (baseline_resident_ == 0) baseline_resident_ = resident;
  resident_gauge_.Set(static_cast<int64_t>(resident));
  const uint64_t steps_per_second = std::max<uint64_t>(
      1, static_cast<uint64_t>(std::chrono::seconds(1) /
                               std::max(options_.step, std::chrono::nanoseconds(1))));
  const bool over = resident > baseline_resident_ + options_.capacity &&
                    step_ >= last_release_step_ + steps_per_second;
  // Queued bytes fell by a quarter of the budget since the last release: a burst is over.
  const uint64_t now_used = used();
  used_high_ = std::max(used_high_, now_used);
  const bool fell = used_high_ > now_used + queued_capacity_ / 4;
  if (release_after_trim_ || over || fell) {
    ReleaseFreeHeap();
    heap_releases_.Add();
    last_release_step_ = step_;
    used_high_ = now_used;
  }
  release_after_trim_ = trimmed;  // the evicted batches are freed by the next step
}

uint64_t MemoryBudget::Trim(TrimReason reason, const std::vector<BufferState>& batches,
                            std::chrono::steady_clock::time_point t0) {
  const TierSample sample{.capacity = queued_capacity_, .used = used(), .fragmentation = 0};
  uint64_t want = policy_.BytesToFree(sample);
  if (reason == TrimReason::kIdleShare) {
    // Everything idle long enough goes, even under the watermark.
    for (const BufferState& b : batches) {
      if (!b.in_use && step_ >= b.last_used_step + policy_.options().idle_steps) want += b.size;
    }
  }
  // Ask for every candidate in score order; holders may refuse, so stop on bytes freed.
  const std::vector<uint64_t> order = policy_.ChooseVictims(batches, step_, UINT64_MAX);
  uint64_t freed = 0, evicted = 0;
  for (uint64_t victim : order) {
    if (freed >= want) break;
    BatchHolder* h = holders_[victim >> kHolderShift];
    const uint64_t got = h ? h->Evict(victim & kLocalMask) : 0;
    if (got == 0) {
      refused_.Add();
      continue;
    }
    freed += got;
    ++evicted;
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  trim_seconds_.Observe(seconds);
  if (evicted > 0) {
    metrics_
        .GetCounter("seedance_memory_trims_total",
                    "Trims of the memory budget that evicted batches, by trigger.",
                    {{"reason", TrimReasonName(reason)}})
        .Add();
    evictions_.Add(evicted);
  }
  moved_to_disk_.Add(freed);
  SEEDANCE_LOG_DEBUG(
      "governor",
      "trim ({}): {} of {} queued bytes in memory, evicted {} batches ({} bytes) in {:.0f} us",
      TrimReasonName(reason), used(), queued_capacity_, evicted, freed, seconds * 1e6);
  if (freed > 0) {
    for (BatchHolder* h : holders_) {
      if (h) h->OnRoom();
    }
  }
  return freed;
}

}  // namespace seedance::governor
