// trim_bench: the seedance::trim library on a synthetic dual workload, trimming off and on.
//
//   trim_bench [--steps N] [--svg PATH] [--tier host|cuda] [--copies sync|async]
//              [--access read|write] [--groups on|off] [--copy-threads N] [--control on]
//
//   --copies async   PolicyOptions::async_copies (default off, as in the library)
//   --access read    the compute only reads its buffers (inference weights): AcquireRead(), so
//                    a buffer that came back moves down again to its kept copy (the default)
//   --access write   every use may write: Acquire(), every move down copies
//   --control on     both runs with trimming off (an A/A test): the step_overhead it reports
//                    is the measurement's own error, which should be near 0
//   --groups off     register the buffers in no group (default: each model is a group, so
//                    with async copies a stall brings the rest of its group back)
//   --copy-threads N host tier: threads per waited copy of 8 MiB or more (default: the cores,
//                    up to 4; copies in the background use one)
//
// The two runs alternate in blocks of 100 steps, each pair of blocks in turn off-on and
// on-off, and step_overhead is the total step time on over off, minus one;
// step_overhead_blocks lists it per pair of blocks. trim_latency_us comes from a separate
// probe with many decisions (ProbeDecisions); trim_latency_us_workload from this workload.
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
#include <thread>
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
constexpr int kBlockSteps = 100;

struct Group {
  std::string name;  // registered as the buffers' group (a model)
  std::vector<uint64_t> sizes;
  std::vector<trim::BufferId> ids;
  uint64_t bytes = 0;
};

Group MakeGroup(std::mt19937_64& rng, std::string name, int small, int large) {
  Group g;
  g.name = std::move(name);
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

bool g_cuda = false;
bool g_async = false;
bool g_write = false;
bool g_groups = true;
bool g_control = false;
int g_copy_threads = 0;  // 0: the default for the copy mode

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

// The fast and the slow tier: host RAM, or GPU memory and pinned host memory.
std::vector<std::unique_ptr<trim::Tier>> MakeTiers(uint64_t fast, uint64_t slow) {
  std::vector<std::unique_ptr<trim::Tier>> tiers;
  if (g_cuda) {
    auto cuda = trim::MakeCudaTiers(
        {.device = 0, .device_budget = fast, .small_arena = 128 * kMiB, .pinned_capacity = slow});
    if (!cuda) {
      std::fprintf(stderr, "trim_bench: %s\n", cuda.error().message().c_str());
      std::exit(1);
    }
    return std::move(cuda).value();
  }
  tiers.push_back(trim::MakeHostTier("fast", fast, g_copy_threads));
  tiers.push_back(trim::MakeHostTier("slow", slow, g_copy_threads));
  return tiers;
}

// One manager (trimming off or on) over its own copy of the groups. Steps run in blocks, so
// the two runs can alternate: on a shared machine the speed drifts by several percent within
// seconds, and alternating blocks of one workload cycle lets the drift hit both runs alike.
class Run {
 public:
  Run(bool trimming, const std::vector<Group>& groups) : groups_(groups) {
    uint64_t total = 0;
    for (auto& g : groups_) total += g.bytes;
    trim::PolicyOptions o;
    if (!trimming) o.occupancy_trigger = o.idle_share_trigger = o.fragmentation_trigger = 2;
    o.async_copies = g_async;
    const uint64_t room = total + (g_cuda ? 256 : 64) * kMiB;
    m_ = trim::TierManager::Create(MakeTiers(room, room), o).value();
    for (auto& g : groups_) {
      g.ids.clear();
      for (uint64_t size : g.sizes) {
        auto id = m_->Register(size, {}, g_groups ? g.name : std::string()).value();
        void* p = m_->Acquire(id).value();
        Fill(p, size, static_cast<int>(id));
        (void)m_->Release(id);
        g.ids.push_back(id);
      }
    }
  }

  // Runs steps [first, first + count); returns their time in milliseconds. Moves still in
  // flight at the end are waited for and counted, so none runs into the other run's block.
  double Block(int first, int count) {
    double block_ms = 0;
    for (int step = first; step < first + count; ++step) {
      const auto t0 = Clock::now();
      std::vector<const Group*> working{&groups_[0]};
      if (step % 200 < 10) working.push_back(&groups_[1]);
      if (step % 400 == 100) working.push_back(&groups_[2]);  // between two bursts
      uint64_t sum = 0;
      for (const Group* g : working) {
        for (size_t i = 0; i < g->ids.size(); ++i) {
          const void* p =
              g_write ? m_->Acquire(g->ids[i]).value() : m_->AcquireRead(g->ids[i]).value();
          sum += Compute(p, g->sizes[i]);
          (void)m_->Release(g->ids[i]);
        }
      }
      EndOfStep();
      g_sink = sum;
      m_->Step();
      if (step == first + count - 1) (void)m_->TierOf(groups_[0].ids[0]);  // waits for moves
      const double ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
      block_ms += ms;
      const trim::TrimStats st = m_->Stats();
      // Steady state: every buffer starts on the fast tier and can only become idle after
      // idle_steps, so the first 100 steps are warm-up for the peak.
      if (step >= kWarmupSteps && st.tiers[0].used > peak) {
        peak = st.tiers[0].used;
        idle_share_at_peak = st.idle_share;
      }
      used_total_ += static_cast<double>(st.tiers[0].used);
      idle_total_ += st.idle_share;
      fast_mib.push_back(static_cast<double>(st.tiers[0].used) / kMiB);
    }
    step_ms_total += block_ms;
    return block_ms;
  }

  trim::TrimStats Stats() const { return m_->Stats(); }
  double MeanBytes() const { return used_total_ / static_cast<double>(fast_mib.size()); }
  double IdleShareMean() const { return idle_total_ / static_cast<double>(fast_mib.size()); }
  double StepMs() const { return step_ms_total / static_cast<double>(fast_mib.size()); }

  uint64_t peak = 0;
  double idle_share_at_peak = 0;
  double step_ms_total = 0;
  std::vector<double> fast_mib;  // per step

 private:
  std::vector<Group> groups_;
  std::unique_ptr<trim::TierManager> m_;
  double used_total_ = 0;
  double idle_total_ = 0;
};

// Trim decision latency over many decisions: the dual workload trims a few times per cycle
// (16 decisions in 2,000 steps), too few for a P99. Here 10,000 buffers are registered (the
// workload's small ones and 64 of 16 MiB) on a fast tier with room for 48 of the large ones;
// each step reads the next large one in turn, which stalls and makes room by trimming others.
trim::TrimStats ProbeDecisions(const std::vector<Group>& groups, int steps) {
  constexpr int kLarge = 64;
  constexpr uint64_t kLargeBytes = 16 * kMiB;
  std::vector<uint64_t> small;
  for (const Group& g : groups) {
    for (uint64_t size : g.sizes) {
      if (size < kLargeBytes && small.size() < 10000 - kLarge) small.push_back(size);
    }
  }
  uint64_t small_bytes = 0;
  for (uint64_t size : small) small_bytes += size;
  trim::PolicyOptions o;
  o.async_copies = g_async;
  auto m = trim::TierManager::Create(MakeTiers(small_bytes + 48 * kLargeBytes + 4 * kMiB,
                                               small_bytes + 2 * kLarge * kLargeBytes),
                                     o)
               .value();
  for (uint64_t size : small) (void)m->Register(size).value();
  std::vector<trim::BufferId> large;
  for (int i = 0; i < kLarge; ++i) large.push_back(m->Register(kLargeBytes).value());
  for (int step = 0; step < steps; ++step) {
    const trim::BufferId id = large[static_cast<size_t>(step) % large.size()];
    g_sink = Compute(m->AcquireRead(id).value(), 4096);
    (void)m->Release(id);
    EndOfStep();
    m->Step();
  }
  return m->Stats();
}

// The host "link": the best of five bulk copies of 256 MiB between two arenas of the host
// tier, with the tier's own copy (`parallel`: copy_threads threads, non-temporal stores), or
// with one plain memcpy for reference.
double HostCopyGbps(bool parallel) {
  auto from = trim::MakeHostTier("a", 256 * kMiB, g_copy_threads);
  auto to = trim::MakeHostTier("b", 256 * kMiB, g_copy_threads);
  void* a = from->Allocate(256 * kMiB).value();
  void* b = to->Allocate(256 * kMiB).value();
  std::memset(a, 1, 256 * kMiB);
  double best = 0;
  for (int i = 0; i < 5; ++i) {
    auto t0 = Clock::now();
    if (parallel) {
      (void)to->CopyFrom(b, a, 256 * kMiB, *from, trim::CopyUrgency::kWaited);
    } else {
      std::memcpy(b, a, 256 * kMiB);
    }
    double s = std::chrono::duration<double>(Clock::now() - t0).count();
    best = std::max(best, static_cast<double>(256 * kMiB) / s / 1e9);
  }
  g_sink = static_cast<const unsigned char*>(b)[12345];
  return best;
}

[[noreturn]] void Usage(const char* why) {
  std::fprintf(stderr,
               "trim_bench: %s\nusage: trim_bench [--steps N] [--svg PATH] [--tier host|cuda] "
               "[--copies sync|async] [--access read|write] [--groups on|off] [--copy-threads N] "
               "[--control on|off]\n",
               why);
  std::exit(2);
}

}  // namespace

int main(int argc, char** argv) {
  int steps = 800;
  std::string svg;
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    if (i + 1 >= argc) Usage(("missing value for " + flag).c_str());
    const std::string value = argv[++i];
    if (flag == "--steps") {
      steps = std::atoi(value.c_str());
    } else if (flag == "--svg") {
      svg = value;
    } else if (flag == "--tier" && (value == "host" || value == "cuda")) {
      g_cuda = value == "cuda";
    } else if (flag == "--copies" && (value == "sync" || value == "async")) {
      g_async = value == "async";
    } else if (flag == "--access" && (value == "read" || value == "write")) {
      g_write = value == "write";
    } else if (flag == "--control" && (value == "on" || value == "off")) {
      g_control = value == "on";
    } else if (flag == "--groups" && (value == "on" || value == "off")) {
      g_groups = value == "on";
    } else if (flag == "--copy-threads") {
      g_copy_threads = std::atoi(value.c_str());
    } else {
      Usage(("unknown flag or value: " + flag + " " + value).c_str());
    }
  }
  if (steps <= kWarmupSteps) Usage("--steps must be over 100");
  if (g_copy_threads <= 0) {
    g_copy_threads = static_cast<int>(std::clamp(std::thread::hardware_concurrency(), 1u, 4u));
  }
#ifndef SEEDANCE_WITH_CUDA
  if (g_cuda) {
    std::fprintf(stderr, "trim_bench: built without CUDA\n");
    return 1;
  }
#endif
  std::mt19937_64 rng(2026);
  std::vector<Group> groups;
  groups.push_back(MakeGroup(rng, "small", 1999, 1));  // small model
  groups.push_back(MakeGroup(rng, "large", 3995, 5));  // large model, bursts
  groups.push_back(MakeGroup(rng, "cold", 3995, 5));   // large, cold
  const double memcpy_gbps = HostCopyGbps(false);
  double pinned = HostCopyGbps(true);
#ifdef SEEDANCE_WITH_CUDA
  if (g_cuda) pinned = gpu_testing::PinnedBandwidthGbps(256 * kMiB);
#endif
  Run off(false, groups);
  Run on(!g_control, groups);
  std::string overhead_list;
  for (int first = 0, pair = 0; first < steps; first += kBlockSteps, ++pair) {
    const int count = std::min(kBlockSteps, steps - first);
    double off_ms, on_ms;
    if (pair % 2 == 0) {
      off_ms = off.Block(first, count);
      on_ms = on.Block(first, count);
    } else {
      on_ms = on.Block(first, count);
      off_ms = off.Block(first, count);
    }
    overhead_list += fmt::format("{}{:.4f}", overhead_list.empty() ? "" : ", ", on_ms / off_ms - 1);
  }
  const trim::TrimStats stats = on.Stats();
  const trim::TrimStats probe = ProbeDecisions(groups, 3000);
  const uint64_t moved = stats.bytes_moved_down + stats.bytes_moved_up;
  const uint64_t copied = moved - stats.bytes_down_without_copy;
  const double copy_gbps = stats.copy_seconds > 0 ? copied / stats.copy_seconds / 1e9 : 0;
  if (!svg.empty()) {
    std::vector<double> x;
    for (int i = 0; i < steps; ++i) x.push_back(i);
    std::ofstream(svg) << bench::LineChartSvg(
        g_cuda ? "seedance::trim, CUDA tiers: GPU bytes per step"
               : "seedance::trim, host tier: fast-tier bytes per step",
        "step", x,
        {{"fast tier (MiB)",
          {{"trimming off", "#d62728", off.fast_mib}, {"trimming on", "#1f77b4", on.fast_mib}}}});
  }
  std::printf(
      "{\"benchmark\": \"trim\", \"tier\": \"%s\", \"copies\": \"%s\", \"access\": \"%s\", "
      "\"copy_threads\": %d, \"control\": %s, "
      "\"buffers\": %llu, \"steps\": %d, "
      "\"registered_bytes\": %llu, \"peak_bytes_off\": %llu, \"peak_bytes_on\": %llu, "
      "\"mean_bytes_off\": %.0f, \"mean_bytes_on\": %.0f, \"peak_reduction\": %.3f, "
      "\"idle_share\": %.3f, \"idle_share_mean\": %.3f, \"step_ms_off\": %.3f, \"step_ms_on\": "
      "%.3f, "
      "\"step_overhead\": %.4f, \"step_overhead_blocks\": [%s], "
      "\"trims\": %llu, \"stalls\": %llu, \"prefetches\": %llu, \"bytes_moved\": %llu, "
      "\"bytes_copied\": %llu, "
      "\"trim_latency_us\": {\"p50\": %.2f, \"p99\": %.2f, \"decisions\": %llu, \"candidates\": "
      "\"up to 48 of 10,000 buffers\"}, "
      "\"trim_latency_us_workload\": {\"p50\": %.2f, \"p99\": %.2f, \"decisions\": %llu}, "
      "\"copy_gbps\": %.2f, "
      "\"pinned_gbps\": %.2f, \"memcpy_gbps\": %.2f}\n",
      g_cuda ? "cuda" : "host", g_async ? "async" : "sync", g_write ? "write" : "read",
      g_copy_threads, g_control ? "true" : "false", static_cast<unsigned long long>(stats.buffers),
      steps, static_cast<unsigned long long>(stats.registered_bytes),
      static_cast<unsigned long long>(off.peak), static_cast<unsigned long long>(on.peak),
      off.MeanBytes(), on.MeanBytes(),
      1.0 - static_cast<double>(on.peak) / static_cast<double>(off.peak), on.idle_share_at_peak,
      on.IdleShareMean(), off.StepMs(), on.StepMs(), on.step_ms_total / off.step_ms_total - 1.0,
      overhead_list.c_str(), static_cast<unsigned long long>(stats.trims),
      static_cast<unsigned long long>(stats.stalls),
      static_cast<unsigned long long>(stats.prefetches), static_cast<unsigned long long>(moved),
      static_cast<unsigned long long>(copied), probe.trim_latency_p50_us, probe.trim_latency_p99_us,
      static_cast<unsigned long long>(probe.trim_decisions), stats.trim_latency_p50_us,
      stats.trim_latency_p99_us, static_cast<unsigned long long>(stats.trim_decisions), copy_gbps,
      pinned, memcpy_gbps);
  return 0;
}
