#include "sources/gpu/sampler.h"

#include "util/thread_name.h"

namespace seedance::sources::gpu {

Sampler::Sampler(std::function<Result<std::unique_ptr<GpuBackend>>()> open,
                 std::chrono::nanoseconds interval, std::chrono::nanoseconds reopen_interval,
                 std::function<int64_t()> now_ns, Callbacks callbacks)
    : open_(std::move(open)),
      interval_(interval),
      reopen_interval_(reopen_interval),
      now_ns_(std::move(now_ns)),
      callbacks_(std::move(callbacks)) {}

Sampler::~Sampler() { Stop(); }

void Sampler::Start(std::unique_ptr<GpuBackend> backend) {
  thread_ = std::thread([this, b = std::move(backend)]() mutable { Loop(std::move(b)); });
}

void Sampler::Stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
}

bool Sampler::WaitUntil(std::chrono::steady_clock::time_point deadline) {
  std::unique_lock<std::mutex> lock(mu_);
  return !wake_.wait_until(lock, deadline, [this] { return stop_; });
}

void Sampler::Loop(std::unique_ptr<GpuBackend> backend) {
  util::NameThisThread("sd-gpu");
  using Clock = std::chrono::steady_clock;
  bool failed_before = false;
  while (backend == nullptr) {
    Result<std::unique_ptr<GpuBackend>> opened = open_();
    if (opened.has_value()) {
      backend = std::move(opened).value();
      for (GpuBackend::Notice& n : backend->TakeNotices()) callbacks_.on_notice(std::move(n));
      callbacks_.on_open(Status::Ok(), backend->name());
      break;
    }
    if (!failed_before) callbacks_.on_open(opened.status(), "");
    failed_before = true;
    if (!WaitUntil(Clock::now() + reopen_interval_)) return;
  }
  Clock::time_point next = Clock::now();
  std::vector<GpuSample> samples;
  while (true) {
    samples.clear();
    backend->Sample(now_ns_(), &samples);
    rounds_.fetch_add(1, std::memory_order_relaxed);
    for (GpuBackend::Notice& n : backend->TakeNotices()) callbacks_.on_notice(std::move(n));
    callbacks_.on_samples(std::move(samples));
    next += interval_;
    Clock::time_point now = Clock::now();
    if (now >= next) {  // overran: skip the periods already past, count them
      auto behind = (now - next) / interval_ + 1;
      missed_.fetch_add(static_cast<uint64_t>(behind), std::memory_order_relaxed);
      next += behind * interval_;
    }
    if (!WaitUntil(next)) return;
  }
}

}  // namespace seedance::sources::gpu
