#include "sources/gpu/sampler.h"

#include <atomic>
#include <condition_variable>
#include <mutex>
#include <thread>

#include "util/thread_name.h"

namespace seedance::sources::gpu {

using Clock = std::chrono::steady_clock;

// Shared by the Sampler and its thread, so that a thread left behind by Stop() still has it.
struct Sampler::State {
  std::function<Result<std::unique_ptr<GpuBackend>>()> open;
  std::chrono::nanoseconds interval, reopen_interval;
  std::function<int64_t()> now_ns;
  Callbacks callbacks;

  std::mutex mu;  // guards stop and done; held while a callback runs
  std::condition_variable wake;
  bool stop = false;
  bool done = false;
  std::atomic<uint64_t> missed{0}, rounds{0};
  std::atomic<int64_t> last_round{0};  // Clock ticks; 0 while opening
  std::thread thread;

  // Waits until `deadline` or Stop(); false on Stop().
  bool WaitUntil(Clock::time_point deadline) {
    std::unique_lock<std::mutex> lock(mu);
    return !wake.wait_until(lock, deadline, [this] { return stop; });
  }
  // Runs `fn` unless Stop() was called; false when it was.
  template <typename Fn>
  bool Call(Fn&& fn) {
    std::lock_guard<std::mutex> lock(mu);
    if (stop) return false;
    fn();
    return true;
  }
  void MarkRound() { last_round.store(Clock::now().time_since_epoch().count()); }
};

Sampler::Sampler(std::function<Result<std::unique_ptr<GpuBackend>>()> open,
                 std::chrono::nanoseconds interval, std::chrono::nanoseconds reopen_interval,
                 std::function<int64_t()> now_ns, Callbacks callbacks)
    : state_(std::make_shared<State>()) {
  state_->open = std::move(open);
  state_->interval = interval;
  state_->reopen_interval = reopen_interval;
  state_->now_ns = std::move(now_ns);
  state_->callbacks = std::move(callbacks);
}

Sampler::~Sampler() { Stop(); }

void Sampler::Start(std::unique_ptr<GpuBackend> backend) {
  state_->MarkRound();
  state_->thread = std::thread(&Sampler::Loop, state_, std::move(backend));
}

bool Sampler::Stop(std::chrono::milliseconds wait) {
  std::unique_lock<std::mutex> lock(state_->mu);
  state_->stop = true;
  state_->wake.notify_all();
  if (!state_->thread.joinable()) return true;
  if (!state_->wake.wait_for(lock, wait, [this] { return state_->done; })) {
    state_->thread.detach();  // stuck in the driver: it ends on its own, calling nothing
    return false;
  }
  lock.unlock();
  state_->thread.join();
  return true;
}

uint64_t Sampler::missed() const { return state_->missed.load(std::memory_order_relaxed); }
uint64_t Sampler::rounds() const { return state_->rounds.load(std::memory_order_relaxed); }

Clock::duration Sampler::SinceLastRound() const {
  int64_t last = state_->last_round.load();
  if (last == 0) return Clock::duration(0);
  return Clock::now().time_since_epoch() - Clock::duration(last);
}

void Sampler::Loop(std::shared_ptr<State> s, std::unique_ptr<GpuBackend> backend) {
  util::NameThisThread("sd-gpu");
  auto finish = [&s] {
    std::lock_guard<std::mutex> lock(s->mu);
    s->done = true;
    s->wake.notify_all();
  };
  bool failed_before = false;
  while (backend == nullptr) {
    s->last_round.store(0);  // opening: not a stalled round
    Result<std::unique_ptr<GpuBackend>> opened = s->open();
    if (opened.has_value()) {
      backend = std::move(opened).value();
      s->MarkRound();
      std::vector<GpuBackend::Notice> notices = backend->TakeNotices();
      if (!s->Call([&] {
            for (GpuBackend::Notice& n : notices) s->callbacks.on_notice(std::move(n));
            s->callbacks.on_open(Status::Ok(), backend->name());
          })) {
        return finish();
      }
      break;
    }
    if (!failed_before && !s->Call([&] { s->callbacks.on_open(opened.status(), ""); })) {
      return finish();
    }
    failed_before = true;
    if (!s->WaitUntil(Clock::now() + s->reopen_interval)) return finish();
  }
  Clock::time_point next = Clock::now();
  std::vector<GpuSample> samples;
  while (true) {
    samples.clear();
    backend->Sample(s->now_ns(), &samples);
    s->rounds.fetch_add(1, std::memory_order_relaxed);
    s->MarkRound();
    std::vector<GpuBackend::Notice> notices = backend->TakeNotices();
    if (!s->Call([&] {
          for (GpuBackend::Notice& n : notices) s->callbacks.on_notice(std::move(n));
          s->callbacks.on_samples(std::move(samples));
        })) {
      return finish();
    }
    next += s->interval;
    Clock::time_point now = Clock::now();
    if (now >= next) {  // overran: skip the periods already past, count them
      auto behind = (now - next) / s->interval + 1;
      s->missed.fetch_add(static_cast<uint64_t>(behind), std::memory_order_relaxed);
      next += behind * s->interval;
    }
    if (!s->WaitUntil(next)) return finish();
  }
}

}  // namespace seedance::sources::gpu
