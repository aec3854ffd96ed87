// HostStreamDevice: the StreamDevice of weight streaming on the CPU backend
// (trim/stream_executor.h). Copies run on a thread of their own, in order, so they overlap the
// compute. The compute is the calling thread itself: on a CPU the host *is* the compute stream,
// so ComputeWaits blocks the caller until the copy is done (counted in host_waits; a GPU's
// device does this wait instead), and RecordCompute's events have passed already (what the
// host issued has run by the time it issues the next call).
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <mutex>
#include <thread>
#include <vector>

#include "trim/stream_executor.h"

namespace seedance::trim {

class HostStreamDevice final : public StreamDevice {
 public:
  HostStreamDevice();
  ~HostStreamDevice() override;  // finishes the copies queued, then joins
  HostStreamDevice(const HostStreamDevice&) = delete;
  HostStreamDevice& operator=(const HostStreamDevice&) = delete;

  Event CopyAfter(void* dst, const void* src, uint64_t bytes, Event after) override;
  void ComputeWaits(Event e) override;
  Event RecordCompute() override;

  uint64_t host_waits() const override;  // ComputeWaits calls that found their copy not done yet

 private:
  struct Copy {
    void* dst;
    const void* src;
    uint64_t bytes;
    Event done;
  };
  Event NewEvent(bool passed);  // REQUIRES: mu_ held
  void Loop();

  mutable std::mutex mu_;
  std::condition_variable work_cv_;
  std::condition_variable done_cv_;
  std::deque<Copy> queue_;
  std::vector<uint8_t> passed_;  // by event - 1
  uint64_t host_waits_ = 0;
  bool stop_ = false;
  std::thread thread_;  // last: started once the rest exists
};

}  // namespace seedance::trim
