#include "trim/copy_worker.h"

#include <chrono>
#include <utility>

namespace seedance::trim {

CopyWorker::CopyWorker() : thread_([this] { Loop(); }) {}

CopyWorker::~CopyWorker() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

void CopyWorker::Submit(std::shared_ptr<Job> job) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    queue_.push_back(std::move(job));
  }
  cv_.notify_all();
}

void CopyWorker::Wait(const Job& job) {
  std::unique_lock<std::mutex> lock(mu_);
  done_cv_.wait(lock, [&] { return job.done.load(); });
}

Status CopyWorker::Run(Job& job) {
  if (job.codec == nullptr) {
    return job.to->CopyFrom(job.dst, job.src, job.size, *job.from, CopyUrgency::kBackground);
  }
  if (job.down) return job.codec->EncodeTo(job.dst, job.encoded, *job.to, job.src, job.size);
  return job.codec->DecodeFrom(job.dst, job.size, *job.from, job.src, job.encoded);
}

void CopyWorker::Loop() {
  std::unique_lock<std::mutex> lock(mu_);
  while (true) {
    cv_.wait(lock, [&] { return stop_ || !queue_.empty(); });
    if (queue_.empty()) return;  // stopping, nothing left
    std::shared_ptr<Job> job = std::move(queue_.front());
    queue_.pop_front();
    lock.unlock();
    auto t0 = std::chrono::steady_clock::now();
    job->result = Run(*job);
    job->seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    lock.lock();
    job->done = true;
    done_cv_.notify_all();
  }
}

}  // namespace seedance::trim
