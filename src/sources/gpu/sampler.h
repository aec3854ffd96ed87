// Sampler: reads every GPU of a backend at a fixed period on a thread of its own, so that the
// driver's blocking calls never hold up the event loop.
//
// Periods are paced by absolute deadlines (start + k x interval): a slow reading delays no
// later one, and a reading that overran whole periods skips them, counting each as missed
// rather than taking a burst of catch-up readings. The sample time is read when a round
// starts. The backend is opened on the thread; while it cannot be, the sampler tries again
// every `reopen_interval`.
//
// Thread-safety: Start() and Stop() from one thread; the callbacks run on the sampler's.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
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
  ~Sampler();  // stops
  Sampler(const Sampler&) = delete;
  Sampler& operator=(const Sampler&) = delete;

  // Starts the thread. With `backend` given (already opened by the caller), uses it.
  void Start(std::unique_ptr<GpuBackend> backend = nullptr);
  // Ends the thread after the round in progress.
  void Stop();
  // Periods skipped because a round overran them.
  uint64_t missed() const { return missed_.load(std::memory_order_relaxed); }
  uint64_t rounds() const { return rounds_.load(std::memory_order_relaxed); }

 private:
  void Loop(std::unique_ptr<GpuBackend> backend);
  // Waits until `deadline` or Stop(); false on Stop().
  bool WaitUntil(std::chrono::steady_clock::time_point deadline);

  std::function<Result<std::unique_ptr<GpuBackend>>()> open_;
  std::chrono::nanoseconds interval_, reopen_interval_;
  std::function<int64_t()> now_ns_;
  Callbacks callbacks_;
  std::thread thread_;
  std::mutex mu_;
  std::condition_variable wake_;
  bool stop_ = false;
  std::atomic<uint64_t> missed_{0}, rounds_{0};
};

}  // namespace seedance::sources::gpu
