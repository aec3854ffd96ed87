// Sampler: reads every GPU of a backend at a fixed period on a thread of its own, so that the
// driver's blocking calls never hold up the event loop.
//
// Periods are paced by absolute deadlines (start + k x interval): a slow reading delays no
// later one, and a reading that overran whole periods skips them, counting each as missed
// rather than taking a burst of catch-up readings. The sample time is read when a round
// starts. The backend is opened on the thread; while it cannot be, the sampler tries again
// every `reopen_interval`.
//
// A driver call that never returns (a wedged GPU: NVML can block for minutes after an Xid)
// cannot hang its owner: SinceLastRound() tells how long the thread has been silent, and
// Stop() waits a bounded time, then leaves the thread behind (it owns its state and the
// backend, and calls no callback after Stop() returned).
//
// Thread-safety: Start(), Stop() and the accessors from any one thread; the callbacks run on
// the sampler's, never after Stop() returned.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "sources/gpu/gpu_backend.h"

namespace seedance::sources::gpu {

class Sampler {
 public:
  struct Callbacks {
    // One round: a sample per device.
    std::function<void(std::vector<GpuSample>&& samples)> on_samples;
    // The backend is open (ok), or could not be opened (`status`: once, not per retry).
    std::function<void(const Status& status, std::string_view backend)> on_open;
    // A line worth logging (GpuBackend::TakeNotices).
    std::function<void(GpuBackend::Notice&& notice)> on_notice;
  };

  // `open`: makes and opens the backend (OpenBackend, or a test's). `now_ns`: Unix ns.
  Sampler(std::function<Result<std::unique_ptr<GpuBackend>>()> open,
          std::chrono::nanoseconds interval, std::chrono::nanoseconds reopen_interval,
          std::function<int64_t()> now_ns, Callbacks callbacks);
  ~Sampler();  // Stop()
  Sampler(const Sampler&) = delete;
  Sampler& operator=(const Sampler&) = delete;

  // Starts the thread. With `backend` given (already opened by the caller), uses it.
  void Start(std::unique_ptr<GpuBackend> backend = nullptr);
  // Ends the thread after the round in progress. Returns false when the round did not end
  // within `wait` (a driver call that does not return): the thread is then left to end on its
  // own whenever the call returns.
  bool Stop(std::chrono::milliseconds wait = std::chrono::seconds(2));
  // Periods skipped because a round overran them.
  uint64_t missed() const;
  uint64_t rounds() const;
  // How long since the thread last finished a round (or opened the backend, or started);
  // zero while it waits to open one.
  std::chrono::steady_clock::duration SinceLastRound() const;

 private:
  struct State;
  static void Loop(std::shared_ptr<State> state, std::unique_ptr<GpuBackend> backend);

  std::shared_ptr<State> state_;
};

}  // namespace seedance::sources::gpu
