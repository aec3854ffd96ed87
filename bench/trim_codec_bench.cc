// trim_codec_bench: the zero-block codec on the trims of seedance::trim: how fast buffers
// cross to the slower tier and back, and the room they take there, at zero fractions 0, 0.5,
// 0.9 and 1, with the codec off, "when it pays" (BufferCodec::kZeroBlocks, from the rates the
// manager measures) and always.
//
//   trim_codec_bench [--tier host|cuda] [--size-mib N] [--buffers N] [--rounds N]
//
// --tier host (default): two RAM tiers, the CPU codec. --tier cuda: GPU memory and pinned host
// memory, the device codec (cuda/zero_block_staging.h); it also reports the pinned link's
// measured rate and, per row, the issue's target for the effective rate, 0.8 × link / (1 − z).
//
// Each case registers `buffers` buffers of `size` MiB whose 256-byte blocks are zero in the
// given fraction (chosen at random), then runs `rounds` rounds of: every buffer trimmed down
// (one Trim to a low watermark of 0), then every buffer acquired for writing (a stall each, so
// every round copies both ways). Copies use one thread, like the codec. The first round is a
// warm-up (it also measures the link for "when it pays"); rates are bytes of the buffers over
// the time of the remaining rounds. Content is checked after the last round. One JSON line.
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "seedance/trim.h"
#ifdef SEEDANCE_WITH_CUDA
#include "gpu/kernels.h"
#endif

using namespace seedance;
using Clock = std::chrono::steady_clock;

namespace {

constexpr uint64_t kMiB = 1 << 20;
bool g_cuda = false;

struct Case {
  double zero_fraction;
  trim::BufferCodec codec;
};

const char* Name(trim::BufferCodec c) {
  switch (c) {
    case trim::BufferCodec::kNone:
      return "off";
    case trim::BufferCodec::kZeroBlocks:
      return "when_it_pays";
    case trim::BufferCodec::kZeroBlocksAlways:
      return "always";
  }
  return "?";
}

std::vector<unsigned char> Content(uint64_t size, double zero_fraction, uint32_t seed) {
  std::vector<unsigned char> v(size);
  std::mt19937 rng(seed);
  for (uint64_t i = 0; i < size; ++i) v[i] = static_cast<unsigned char>(rng() | 1);
  std::vector<uint64_t> blocks(size / 256);
  std::iota(blocks.begin(), blocks.end(), 0);
  std::shuffle(blocks.begin(), blocks.end(), rng);
  const auto zero = static_cast<size_t>(zero_fraction * static_cast<double>(blocks.size()));
  for (size_t i = 0; i < zero; ++i) std::memset(v.data() + blocks[i] * 256, 0, 256);
  return v;
}

uint64_t HostSum(const unsigned char* p, uint64_t n) {
  uint64_t sum = 0;
  for (uint64_t i = 0; i < n; ++i) sum += p[i];
  return sum;
}

// The byte sum of a buffer on the fast tier (device memory with --tier cuda).
uint64_t Sum(const void* p, uint64_t n) {
#ifdef SEEDANCE_WITH_CUDA
  if (g_cuda) return gpu_testing::DeviceSum(p, n);
#endif
  return HostSum(static_cast<const unsigned char*>(p), n);
}

void Write(void* dst, const std::vector<unsigned char>& host) {
#ifdef SEEDANCE_WITH_CUDA
  if (g_cuda) {
    (void)gpu_testing::Copy(dst, host.data(), host.size());
    return;
  }
#endif
  std::memcpy(dst, host.data(), host.size());
}

std::vector<std::unique_ptr<trim::Tier>> MakeTiers(uint64_t bytes) {
  std::vector<std::unique_ptr<trim::Tier>> tiers;
  if (g_cuda) {
    // Room for the codec's staging area (about 8.3 MiB) and granule rounding.
    auto cuda = trim::MakeCudaTiers(
        {.device_budget = bytes + 64 * kMiB, .pinned_capacity = bytes + 64 * kMiB});
    if (!cuda) {
      std::fprintf(stderr, "trim_codec_bench: %s\n", cuda.error().message().c_str());
      std::exit(1);
    }
    return std::move(cuda).value();
  }
  tiers.push_back(trim::MakeHostTier("fast", bytes + kMiB, 1));
  tiers.push_back(trim::MakeHostTier("slow", bytes + kMiB, 1));
  return tiers;
}

double Seconds(Clock::time_point since) {
  return std::chrono::duration<double>(Clock::now() - since).count();
}

std::string RunCase(const Case& c, uint64_t size, int buffers, int rounds, double link_gbps) {
  trim::PolicyOptions o;
  o.min_victim_bytes = 0;
  o.low_watermark = 0;  // a Trim moves every idle buffer
  o.occupancy_trigger = o.idle_share_trigger = o.fragmentation_trigger = 2;  // Step never trims
  auto m = trim::TierManager::Create(MakeTiers(size * buffers), o).value();
  std::vector<trim::BufferId> ids;
  std::vector<uint64_t> sums;
  for (int i = 0; i < buffers; ++i) {
    auto id = m->Register(size).value();
    (void)m->SetCodec(id, c.codec);
    void* p = m->Acquire(id).value();
    const auto content = Content(size, c.zero_fraction, static_cast<uint32_t>(i + 1));
    Write(p, content);
    sums.push_back(HostSum(content.data(), size));
    (void)m->Release(id);
    ids.push_back(id);
  }
  double down_s = 0, up_s = 0;
  uint64_t slow_used = 0;
  bool content_ok = true;
  for (int round = 0; round < rounds; ++round) {
    m->Step();
    m->Step();
    auto t0 = Clock::now();
    const size_t moved = m->Trim();
    const double down = Seconds(t0);
    if (moved != static_cast<size_t>(buffers)) {
      return fmt::format(R"({{"error": "round {}: {} of {} buffers moved"}})", round, moved,
                         buffers);
    }
    slow_used = m->Stats().tiers[1].used;
    t0 = Clock::now();
    for (trim::BufferId id : ids) {
      (void)m->Acquire(id).value();
      (void)m->Release(id);
    }
    const double up = Seconds(t0);
    if (round > 0) {
      down_s += down;
      up_s += up;
    }
  }
  for (size_t i = 0; i < ids.size(); ++i) {  // back on the fast tier: no move, only the check
    content_ok &= Sum(m->Acquire(ids[i]).value(), size) == sums[i];
    (void)m->Release(ids[i]);
  }
  const trim::TrimStats s = m->Stats();
  const double bytes = static_cast<double>(size) * buffers * (rounds - 1);
  return fmt::format(
      R"({{"zero_fraction": {}, "codec": "{}", "down_gbps": {:.2f}, "up_gbps": {:.2f}, )"
      R"("round_trip_gbps": {:.2f}, "slow_tier_bytes": {}, "slow_tier_share": {:.4f}, )"
      R"("bytes_moved_encoded": {}, "bytes_codec_saved": {}, "codec_declined": {}, )"
      R"("target_gbps": {}, "content_ok": {}}})",
      c.zero_fraction, Name(c.codec), bytes / down_s / 1e9, bytes / up_s / 1e9,
      bytes / (down_s + up_s) / 1e9, slow_used,
      static_cast<double>(slow_used) / static_cast<double>(size * buffers), s.bytes_moved_encoded,
      s.bytes_codec_saved, s.codec_declined,
      link_gbps > 0 && c.zero_fraction < 1
          ? fmt::format("{:.1f}", 0.8 * link_gbps / (1 - c.zero_fraction))
          : std::string("null"),
      content_ok ? "true" : "false");
}

[[noreturn]] void Usage(const char* why) {
  std::fprintf(stderr,
               "trim_codec_bench: %s\nusage: trim_codec_bench [--tier host|cuda] [--size-mib N] "
               "[--buffers N] [--rounds N]\n",
               why);
  std::exit(2);
}

}  // namespace

int main(int argc, char** argv) {
  uint64_t size_mib = 16;
  int buffers = 8, rounds = 6;
  for (int i = 1; i < argc; i += 2) {
    const std::string flag = argv[i];
    if (i + 1 >= argc) Usage(("missing value for " + flag).c_str());
    if (flag == "--tier") {
      const std::string tier = argv[i + 1];
      if (tier != "host" && tier != "cuda") Usage("--tier is host or cuda");
      g_cuda = tier == "cuda";
      continue;
    }
    const long value = std::strtol(argv[i + 1], nullptr, 10);
    if (value <= 0) Usage(("not a positive number: " + flag + " " + argv[i + 1]).c_str());
    if (flag == "--size-mib") {
      size_mib = static_cast<uint64_t>(value);
    } else if (flag == "--buffers") {
      buffers = static_cast<int>(value);
    } else if (flag == "--rounds" && value >= 2) {
      rounds = static_cast<int>(value);
    } else {
      Usage(("unknown flag or value (--rounds needs 2 or more): " + flag).c_str());
    }
  }
  double link_gbps = 0;
  if (g_cuda) {
#ifdef SEEDANCE_WITH_CUDA
    link_gbps = gpu_testing::PinnedBandwidthGbps(256 * kMiB);
#else
    Usage("--tier cuda: built without CUDA");
#endif
  }
  std::string rows;
  for (double z : {0.0, 0.5, 0.9, 1.0}) {
    for (auto codec : {trim::BufferCodec::kNone, trim::BufferCodec::kZeroBlocks,
                       trim::BufferCodec::kZeroBlocksAlways}) {
      if (!rows.empty()) rows += ", ";
      rows += RunCase({z, codec}, size_mib * kMiB, buffers, rounds, link_gbps);
    }
  }
  fmt::print(R"({{"benchmark": "trim_codec", "tier": "{}", "pinned_link_gbps": {:.1f}, )"
             R"("buffer_mib": {}, "buffers": {}, "rounds": {}, "rows": [{}]}})"
             "\n",
             g_cuda ? "cuda" : "host", link_gbps, size_mib, buffers, rounds, rows);
}
