// trim_bench: the seedance::trim library on a synthetic dual workload, trimming off and on.
//
//   trim_bench [STEPS] [SVG_PATH] [host|cuda] [sync|async]   (async: PolicyOptions::
//                                                            async_copies; default off, as in
//                                                            the library)
//
// Three groups of buffers, 10,000 in all, sizes like a small and a large model's tensors
// (many small ones, a few of 32 MiB):
//   small model   used every step
//   large model   used in bursts: 10 steps out of every 200
//   large, cold   used one step out of every 400, between two bursts (e.g. a second adapter)
// Each step acquires its working set, reads every cache line of it (the "compute"), releases
// it and calls Step(). Fast tier capacity is the same in both runs (everything fits), so the
// trimming on run is driven by the idle-share trigger, as a long-running server would be.
// Prints one JSON line.
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "bench/svg_plot.h"
#include "seedance/trim.h"
#ifdef SEEDANCE_WITH_CUDA
#include "gpu/kernels.h"
#endif

using namespace seedance;
using Clock = std::chrono::steady_clock;

namespace {

constexpr uint64_t kMiB = 1 << 20;
constexpr int kWarmupSteps = 100;

struct Group {
  std::vector<uint64_t> sizes;
  std::vector<trim::BufferId> ids;
  uint64_t bytes = 0;
};

Group MakeGroup(std::mt19937_64& rng, int small, int large) {
  Group g;
  for (int i = 0; i < small; ++i) {  // 1–16 KiB, log-uniform: biases, norms, small layers
    double kib = std::exp(std::uniform_real_distribution<double>(0, std::log(16.0))(rng));
    g.sizes.push_back(static_cast<uint64_t>(kib * 1024));
  }
  for (int i = 0; i < large; ++i) g.sizes.push_back(32 * kMiB);
  for (uint64_t s : g.sizes) g.bytes += s;
  return g;
}

volatile uint64_t g_sink;

uint64_t Touch(const void* p, uint64_t n) {
  const auto* b = static_cast<const unsigned char*>(p);
  uint64_t sum = 0;
  for (uint64_t i = 0; i < n; i += 64) sum += b[i];
  return sum;
}

struct RunResult {
  uint64_t peak = 0;
  double mean = 0;
  double step_ms_mean = 0;
  double idle_share_mean = 0;
  double idle_share_at_peak = 0;
  trim::TrimStats stats;
  std::vector<double> fast_mib;  // per step
};

bool g_cuda = false;
bool g_async = false;

// The step's "compute": on the host, read every cache line; on the GPU, a kernel per buffer
// reading every 64th byte, all launched before one wait at the end of the step.
uint64_t Compute(const void* p, uint64_t n) {
#ifdef SEEDANCE_WITH_CUDA
  if (g_cuda) return gpu_testing::TouchAsync(p, n) ? 1 : 0;
#endif
  return Touch(p, n);
}
void EndOfStep() {
#ifdef SEEDANCE_WITH_CUDA
  if (g_cuda) gpu_testing::Synchronize();
#endif
}
void Fill(void* p, uint64_t n, int value) {
#ifdef SEEDANCE_WITH_CUDA
  if (g_cuda) {
    std::vector<char> host(n, static_cast<char>(value));
    gpu_testing::Copy(p, host.data(), n);
    return;
  }
#endif
  std::memset(p, value, n);
}

RunResult Run(bool trimming, int steps, std::vector<Group>& groups) {
  uint64_t total = 0;
  for (auto& g : groups) total += g.bytes;
  trim::PolicyOptions o;
  if (!trimming) o.occupancy_trigger = o.idle_share_trigger = o.fragmentation_trigger = 2;
  o.async_copies = g_async;
  std::vector<std::unique_ptr<trim::Tier>> tiers;
  if (g_cuda) {
    auto cuda = trim::MakeCudaTiers({.device = 0,
                                     .device_budget = total + 256 * kMiB,
                                     .small_arena = 128 * kMiB,
                                     .pinned_capacity = total + 256 * kMiB});
    if (!cuda) {
      std::fprintf(stderr, "trim_bench: %s\n", cuda.error().message().c_str());
      std::exit(1);
    }
    tiers = std::move(cuda).value();
  } else {
    tiers.push_back(trim::MakeHostTier("fast", total + 64 * kMiB));
    tiers.push_back(trim::MakeHostTier("slow", total + 64 * kMiB));
  }
  auto m = trim::TierManager::Create(std::move(tiers), o).value();
  for (auto& g : groups) {
    g.ids.clear();
    for (uint64_t s : g.sizes) {
      auto id = m->Register(s).value();
      void* p = m->Acquire(id).value();
      Fill(p, s, static_cast<int>(id));
      (void)m->Release(id);
      g.ids.push_back(id);
    }
  }
  RunResult r;
  double step_total = 0, idle_total = 0, used_total = 0;
  for (int step = 0; step < steps; ++step) {
    const auto t0 = Clock::now();
    std::vector<const Group*> working{&groups[0]};
    if (step % 200 < 10) working.push_back(&groups[1]);
    if (step % 400 == 100) working.push_back(&groups[2]);  // between two bursts
    uint64_t sum = 0;
    for (const Group* g : working) {
      for (size_t i = 0; i < g->ids.size(); ++i) {
        void* p = m->Acquire(g->ids[i]).value();
        sum += Compute(p, g->sizes[i]);
        (void)m->Release(g->ids[i]);
      }
    }
    EndOfStep();
    g_sink = sum;
    m->Step();
    step_total += std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
    auto s = m->Stats();
    // Steady state: every buffer starts on the fast tier and can only become idle after
    // idle_steps, so the first 100 steps are warm-up for the peak.
    if (step >= kWarmupSteps && s.tiers[0].used > r.peak) {
      r.peak = s.tiers[0].used;
      r.idle_share_at_peak = s.idle_share;
    }
    used_total += static_cast<double>(s.tiers[0].used);
    idle_total += s.idle_share;
    r.fast_mib.push_back(static_cast<double>(s.tiers[0].used) / kMiB);
  }
  r.mean = used_total / steps;
  r.step_ms_mean = step_total / steps;
  r.idle_share_mean = idle_total / steps;
  r.stats = m->Stats();
  return r;
}

// memcpy bandwidth between two 256 MiB buffers: the host "link" the host tier moves over.
double MemcpyGbps() {
  std::vector<char> a(256 * kMiB, 1), b(256 * kMiB, 2);
  double best = 0;
  for (int i = 0; i < 5; ++i) {
    auto t0 = Clock::now();
    std::memcpy(b.data(), a.data(), a.size());
    double s = std::chrono::duration<double>(Clock::now() - t0).count();
    best = std::max(best, static_cast<double>(a.size()) / s / 1e9);
  }
  g_sink = static_cast<uint64_t>(b[12345]);
  return best;
}

}  // namespace

int main(int argc, char** argv) {
  const int steps = argc > 1 ? std::atoi(argv[1]) : 800;
  g_cuda = argc > 3 && std::string(argv[3]) == "cuda";
  g_async = argc > 4 && std::string(argv[4]) == "async";
#ifndef SEEDANCE_WITH_CUDA
  if (g_cuda) {
    std::fprintf(stderr, "trim_bench: built without CUDA\n");
    return 1;
  }
#endif
  std::mt19937_64 rng(2026);
  std::vector<Group> groups;
  groups.push_back(MakeGroup(rng, 1999, 1));  // small model
  groups.push_back(MakeGroup(rng, 3995, 5));  // large model, bursts
  groups.push_back(MakeGroup(rng, 3995, 5));  // large, cold
  double pinned = MemcpyGbps();
#ifdef SEEDANCE_WITH_CUDA
  if (g_cuda) pinned = gpu_testing::PinnedBandwidthGbps(256 * kMiB);
#endif
  RunResult off = Run(false, steps, groups);
  RunResult on = Run(true, steps, groups);
  const uint64_t moved = on.stats.bytes_moved_down + on.stats.bytes_moved_up;
  const double copy_gbps = on.stats.copy_seconds > 0 ? moved / on.stats.copy_seconds / 1e9 : 0;
  if (argc > 2) {
    std::vector<double> x;
    for (int i = 0; i < steps; ++i) x.push_back(i);
    std::ofstream(argv[2]) << bench::LineChartSvg(
        g_cuda ? "seedance::trim, CUDA tiers: GPU bytes per step"
               : "seedance::trim, host tier: fast-tier bytes per step",
        "step", x,
        {{"fast tier (MiB)",
          {{"trimming off", "#d62728", off.fast_mib}, {"trimming on", "#1f77b4", on.fast_mib}}}});
  }
  std::printf(
      "{\"benchmark\": \"trim\", \"tier\": \"%s\", \"copies\": \"%s\", \"buffers\": %llu, \"steps\": %d, "
      "\"registered_bytes\": %llu, \"peak_bytes_off\": %llu, \"peak_bytes_on\": %llu, "
      "\"mean_bytes_off\": %.0f, \"mean_bytes_on\": %.0f, \"peak_reduction\": %.3f, "
      "\"idle_share\": %.3f, \"idle_share_mean\": %.3f, \"step_ms_off\": %.3f, \"step_ms_on\": %.3f, \"step_overhead\": %.4f, "
      "\"trims\": %llu, \"stalls\": %llu, \"prefetches\": %llu, \"bytes_moved\": %llu, "
      "\"trim_latency_us\": {\"p50\": %.2f, \"p99\": %.2f}, \"copy_gbps\": %.2f, "
      "\"pinned_gbps\": %.2f}\n",
      g_cuda ? "cuda" : "host", g_async ? "async" : "sync",
      static_cast<unsigned long long>(on.stats.buffers), steps,
      static_cast<unsigned long long>(on.stats.registered_bytes),
      static_cast<unsigned long long>(off.peak), static_cast<unsigned long long>(on.peak), off.mean,
      on.mean, 1.0 - static_cast<double>(on.peak) / static_cast<double>(off.peak),
      on.idle_share_at_peak, on.idle_share_mean, off.step_ms_mean, on.step_ms_mean,
      on.step_ms_mean / off.step_ms_mean - 1.0, static_cast<unsigned long long>(on.stats.trims),
      static_cast<unsigned long long>(on.stats.stalls),
      static_cast<unsigned long long>(on.stats.prefetches), static_cast<unsigned long long>(moved),
      on.stats.trim_latency_p50_us, on.stats.trim_latency_p99_us, copy_gbps, pinned);
  return 0;
}
