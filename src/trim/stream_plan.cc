#include "trim/stream_plan.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <optional>
#include <string>

#include "trim/stream_ring.h"

namespace seedance::trim {
namespace {

// Ring events are times: nanoseconds after the start, plus one (0 means "nothing to wait for").
uint64_t EventAt(double seconds) { return static_cast<uint64_t>(std::llround(seconds * 1e9)) + 1; }
double TimeOf(uint64_t event) { return event == 0 ? 0.0 : static_cast<double>(event - 1) / 1e9; }

}  // namespace

Result<StreamSimulation> SimulateStream(std::span<const UnitRecord> units,
                                        std::span<const uint8_t> resident, uint64_t ring_bytes,
                                        double link, uint64_t alignment, int iterations) {
  const size_t n = units.size();
  if (n == 0 || resident.size() != n || !(link > 0) || iterations < 3) {
    return InvalidArgumentError("stream simulation: units, a resident mask each and a link");
  }
  const size_t total = n * static_cast<size_t>(iterations);
  std::vector<double> copy_start(total, -1), compute_start(total, 0), compute_end(total, 0);
  StreamRing ring(ring_bytes, alignment);
  double copy_free = 0;  // when the copy engine is next free
  double previous_end = 0;
  for (size_t k = 0; k < total; ++k) {
    const UnitRecord& u = units[k % n];
    double ready = 0;
    if (!resident[k % n]) {
      auto place = ring.Place(u.bytes);
      if (!place) {
        return ResourceExhaustedError("stream simulation: a unit of " + std::to_string(u.bytes) +
                                      " bytes does not fit a ring of " +
                                      std::to_string(ring_bytes));
      }
      copy_start[k] = std::max(copy_free, TimeOf(place->after));
      copy_free = copy_start[k] + static_cast<double>(u.bytes) / link;
      ready = copy_free;
    }
    compute_start[k] = std::max(previous_end, ready);
    compute_end[k] = compute_start[k] + u.seconds;
    previous_end = compute_end[k];
    if (!resident[k % n]) ring.ReleaseOldest(EventAt(compute_end[k]));
  }
  // The next to last iteration: steady state, with a next one to copy ahead into.
  const size_t first = n * static_cast<size_t>(iterations - 2);
  StreamSimulation s;
  s.step_seconds = compute_end[first + n - 1] - compute_end[first - 1];
  std::vector<std::pair<double, size_t>> waits;  // (how long, unit)
  for (size_t k = first; k < first + n; ++k) {
    if (resident[k % n]) continue;
    s.bytes_copied += units[k % n].bytes;
    const double ready = copy_start[k] + static_cast<double>(units[k % n].bytes) / link;
    if (ready > compute_end[k - 1] + 1e-12) waits.emplace_back(ready - compute_end[k - 1], k % n);
  }
  std::sort(waits.rbegin(), waits.rend());
  s.copy_waits = waits.size();
  for (const auto& w : waits) s.waited.push_back(w.second);
  // Copies start in unit order, and computes too: one pass counts, for each compute, the
  // streamed units after it whose copy had started (two pointers, not a scan per unit).
  size_t next = 0;  // units (k, next) are counted in `ahead`
  int ahead = 0;
  for (size_t k = 0; k < first + n; ++k) {
    if (next > k) {
      if (copy_start[k] >= 0) --ahead;  // k itself was counted ahead of k - 1
    } else {
      next = k + 1;
    }
    while (next < total && (copy_start[next] < 0 || copy_start[next] < compute_start[k])) {
      if (copy_start[next] >= 0) ++ahead;
      ++next;
    }
    if (k >= first) s.lookahead = std::max(s.lookahead, ahead);
  }
  return s;
}

Result<StreamPlan> PlanStream(std::span<const UnitRecord> units, const StreamPlanOptions& o) {
  const size_t n = units.size();
  if (n == 0 || o.budget == 0 || !(o.link_bytes_per_second > 0)) {
    return InvalidArgumentError("stream plan: units, a budget and a link rate are needed");
  }
  uint64_t model = 0;
  double compute = 0;
  for (const UnitRecord& u : units) {
    if (model + u.bytes < model) return InvalidArgumentError("stream plan: units' bytes overflow");
    model += u.bytes;
    compute += u.seconds;
  }
  StreamPlan plan;
  plan.compute_seconds = compute;
  if (model <= o.budget) {  // everything stays: nothing to stream
    plan.resident.assign(n, 1);
    plan.resident_bytes = model;
    plan.bound_seconds = compute;
    plan.simulated.step_seconds = compute;
    return plan;
  }
  // Most bytes per second of compute first (a unit with no measured compute: first of all).
  std::vector<size_t> order(n);
  std::iota(order.begin(), order.end(), 0);
  auto density = [&](size_t i) {
    return units[i].seconds > 0 ? static_cast<double>(units[i].bytes) / units[i].seconds : HUGE_VAL;
  };
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return density(a) > density(b); });
  const uint64_t align = std::max<uint64_t>(o.alignment, 1);
  auto aligned = [&](uint64_t b) { return (std::max<uint64_t>(b, 1) + align - 1) / align * align; };
  // Ring sizes to try: steps of 5% of the budget, and small multiples of the largest units
  // (a ring needs room for the unit computing and the ones copying ahead).
  std::vector<uint64_t> rings;
  for (int i = 1; i < 20; ++i) rings.push_back(o.budget / 20 * static_cast<uint64_t>(i));
  std::vector<uint64_t> sizes;
  for (const UnitRecord& u : units) sizes.push_back(aligned(u.bytes));
  std::sort(sizes.rbegin(), sizes.rend());
  sizes.erase(std::unique(sizes.begin(), sizes.end()), sizes.end());
  for (size_t i = 0; i < std::min<size_t>(sizes.size(), 8); ++i) {
    for (double f : {1.0, 1.5, 2.0, 3.0}) {
      rings.push_back(static_cast<uint64_t>(f * static_cast<double>(sizes[i])));
    }
  }
  struct Candidate {
    std::vector<uint8_t> resident;
    uint64_t resident_bytes;
    uint64_t ring_bytes;
    StreamSimulation sim;
  };
  std::vector<Candidate> candidates;
  for (uint64_t ring : rings) {
    ring = ring / align * align;
    if (ring == 0 || ring >= o.budget) continue;
    // Units the ring cannot hold must stay; then the densest that fit in what is left.
    std::vector<uint8_t> resident(n, 0);
    uint64_t resident_bytes = 0;
    for (size_t i = 0; i < n; ++i) {
      if (aligned(units[i].bytes) > ring) {
        resident[i] = 1;
        resident_bytes += units[i].bytes;
      }
    }
    if (resident_bytes > o.budget - ring) continue;
    for (size_t i : order) {
      if (resident[i] || resident_bytes + units[i].bytes > o.budget - ring) continue;
      resident[i] = 1;
      resident_bytes += units[i].bytes;
    }
    auto sim = SimulateStream(units, resident, ring, o.link_bytes_per_second, align);
    if (!sim) continue;
    // A compute that waits for its copy: keep that unit instead, giving up the least dense
    // resident units for it, while the step gets faster.
    for (int round = 0; round < 32 && !sim->waited.empty(); ++round) {
      const size_t keep = sim->waited.front();
      std::vector<uint8_t> trial = resident;
      uint64_t trial_bytes = resident_bytes + units[keep].bytes;
      trial[keep] = 1;
      for (auto it = order.rbegin(); it != order.rend() && trial_bytes > o.budget - ring; ++it) {
        if (!trial[*it] || *it == keep || aligned(units[*it].bytes) > ring) continue;
        trial[*it] = 0;
        trial_bytes -= units[*it].bytes;
      }
      if (trial_bytes > o.budget - ring) break;
      for (size_t i : order) {  // what the exchange left free, to the densest that fit
        if (trial[i] || i == keep || trial_bytes + units[i].bytes > o.budget - ring) continue;
        trial[i] = 1;
        trial_bytes += units[i].bytes;
      }
      auto better = SimulateStream(units, trial, ring, o.link_bytes_per_second, align);
      if (!better || better->step_seconds >= sim->step_seconds) break;
      resident = std::move(trial);
      resident_bytes = trial_bytes;
      sim = std::move(better);
    }
    candidates.push_back(Candidate{std::move(resident), resident_bytes, ring, *sim});
  }
  if (candidates.empty()) {
    return ResourceExhaustedError("stream plan: a budget of " + std::to_string(o.budget) +
                                  " bytes leaves no ring that holds the largest streamed unit");
  }
  double fastest = HUGE_VAL;
  for (const Candidate& c : candidates) fastest = std::min(fastest, c.sim.step_seconds);
  const Candidate* best = nullptr;
  for (const Candidate& c : candidates) {
    if (c.sim.step_seconds > fastest * (1 + o.slack)) continue;
    if (best == nullptr || c.resident_bytes > best->resident_bytes) best = &c;
  }
  plan.resident = best->resident;
  plan.resident_bytes = best->resident_bytes;
  plan.ring_bytes = best->ring_bytes;
  plan.streamed_bytes = model - best->resident_bytes;
  plan.bound_seconds =
      std::max(compute, static_cast<double>(plan.streamed_bytes) / o.link_bytes_per_second);
  plan.simulated = best->sim;
  return plan;
}

}  // namespace seedance::trim
