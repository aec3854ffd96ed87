#include "trim/host_stream_device.h"

#include <cstring>

namespace seedance::trim {

HostStreamDevice::HostStreamDevice() : thread_([this] { Loop(); }) {}

HostStreamDevice::~HostStreamDevice() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  work_cv_.notify_all();
  thread_.join();
}

StreamDevice::Event HostStreamDevice::NewEvent(bool passed) {
  passed_.push_back(passed ? 1 : 0);
  return passed_.size();
}

StreamDevice::Event HostStreamDevice::CopyAfter(void* dst, const void* src, uint64_t bytes,
                                                Event /*after*/) {
  // `after` is a compute event, and those have passed on a host (RecordCompute).
  std::lock_guard<std::mutex> lock(mu_);
  const Event done = NewEvent(false);
  queue_.push_back(Copy{dst, src, bytes, done});
  work_cv_.notify_all();
  return done;
}

void HostStreamDevice::ComputeWaits(Event e) {
  std::unique_lock<std::mutex> lock(mu_);
  if (e == 0 || passed_[e - 1]) return;
  ++host_waits_;
  done_cv_.wait(lock, [&] { return passed_[e - 1] != 0; });
}

StreamDevice::Event HostStreamDevice::RecordCompute() {
  std::lock_guard<std::mutex> lock(mu_);
  return NewEvent(true);
}

uint64_t HostStreamDevice::host_waits() const {
  std::lock_guard<std::mutex> lock(mu_);
  return host_waits_;
}

void HostStreamDevice::Loop() {
  std::unique_lock<std::mutex> lock(mu_);
  while (true) {
    work_cv_.wait(lock, [&] { return stop_ || !queue_.empty(); });
    if (queue_.empty()) return;  // stopping, nothing left
    const Copy c = queue_.front();
    queue_.pop_front();
    lock.unlock();
    if (c.bytes > 0) std::memcpy(c.dst, c.src, c.bytes);
    lock.lock();
    passed_[c.done - 1] = 1;
    done_cv_.notify_all();
  }
}

}  // namespace seedance::trim
