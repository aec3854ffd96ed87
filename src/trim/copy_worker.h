// CopyWorker: the moves a TierManager starts in the background (PolicyOptions::async_copies),
// run on one thread in submission order: a plain copy (Tier::CopyFrom, background urgency) or a
// zero-block codec move run by the faster tier (Tier::EncodeTo down, Tier::DecodeFrom back).
// The manager submits a Job, goes on, and completes the move when the job is done (or waits).
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <thread>

#include "seedance/trim.h"

namespace seedance::trim {

class CopyWorker {
 public:
  struct Job {
    void* dst = nullptr;
    const void* src = nullptr;
    uint64_t size = 0;
    Tier* to = nullptr;
    const Tier* from = nullptr;
    bool down = true;  // fast → slow (a trim) or back (a prefetch)
    // The zero-block codec: the faster tier, which encodes (down) or decodes (back) the
    // `encoded` bytes on the slower one; nullptr for a plain copy.
    Tier* codec = nullptr;
    uint64_t encoded = 0;
    Status result;
    double seconds = 0;  // how long the move took
    std::atomic<bool> done{false};
  };

  CopyWorker();
  ~CopyWorker();  // runs what is queued, then joins
  CopyWorker(const CopyWorker&) = delete;
  CopyWorker& operator=(const CopyWorker&) = delete;

  void Submit(std::shared_ptr<Job> job);
  // Waits until `job` is done (REQUIRES: it was submitted).
  void Wait(const Job& job);

 private:
  static Status Run(Job& job);
  void Loop();

  std::mutex mu_;
  std::condition_variable cv_;
  std::condition_variable done_cv_;
  std::deque<std::shared_ptr<Job>> queue_;
  bool stop_ = false;
  std::thread thread_;  // last: started once the rest exists
};

}  // namespace seedance::trim
