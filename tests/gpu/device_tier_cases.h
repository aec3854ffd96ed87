// The trim library's device-tier test bodies, run on two devices: the CUDA tiers on a GPU
// (tests/gpu/cuda_tiers_test.cc, label gpu) and, in every CI run, the address-keeping host tier
// on the CPU (src/trim/device_tier_cases_test.cc). A body that cannot pass fails on the CPU
// first, without waiting for a GPU machine.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "seedance/trim.h"

namespace seedance::trim::testing {

constexpr uint64_t kMiB = 1 << 20;

// A device the cases run on.
class DeviceHarness {
 public:
  virtual ~DeviceHarness() = default;
  // Fast tier (`budget` bytes backed at most; `small_arena` and `capture_safe` as in
  // CudaTierOptions) and a slower tier of `slow` bytes. An error when the device is unusable
  // (the cases then skip, saying why).
  virtual Result<std::vector<std::unique_ptr<Tier>>> MakeTiers(uint64_t budget, uint64_t slow,
                                                               uint64_t small_arena,
                                                               bool capture_safe) = 0;
  virtual bool Write(void* dst, const void* host, uint64_t n) = 0;  // waits
  virtual uint64_t Sum(const void* p, uint64_t n) = 0;              // byte sum, waits
  // Work recorded now that adds one to each byte of [p, p + n) when launched later, at the
  // same address (a captured CUDA graph): null on error.
  virtual void* CaptureAddOne(void* p, uint64_t n) = 0;
  virtual bool Launch(void* graph) = 0;  // waits
  virtual void Destroy(void* graph) = 0;
  // Issues `times` additions of one to each byte without waiting for them.
  virtual bool AddOneManyAsync(void* p, uint64_t n, int times) = 0;
  // Captures an addition of one into a graph while `during` runs on another thread, then
  // launches it (waits). False when the capture broke.
  virtual bool CaptureAddOneWhile(void* p, uint64_t n, const std::function<void()>& during) = 0;
};

inline std::unique_ptr<TierManager> MakeManager(DeviceHarness& d, std::string* skip,
                                                uint64_t budget, uint64_t slow, PolicyOptions o,
                                                uint64_t small_arena = 64 * kMiB,
                                                bool capture_safe = false) {
  auto tiers = d.MakeTiers(budget, slow, small_arena, capture_safe);
  if (!tiers) {
    *skip = tiers.error().ToString();
    return nullptr;
  }
  auto m = TierManager::Create(std::move(tiers).value(), o);
  if (!m) {
    *skip = m.error().ToString();
    return nullptr;
  }
  return std::move(m).value();
}

#define SEEDANCE_MANAGER_OR_SKIP(m, device, ...)                                      \
  std::string skip_reason;                                                            \
  auto m = ::seedance::trim::testing::MakeManager(device, &skip_reason, __VA_ARGS__); \
  if (!m) GTEST_SKIP() << "no usable device: " << skip_reason

// Random bytes: one draw seeds a xorshift64* stream, eight bytes per step.
inline void FillRandom(std::vector<unsigned char>& v, std::mt19937_64& rng) {
  uint64_t x = rng() | 1;
  for (size_t i = 0; i < v.size(); i += 8) {
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    const uint64_t r = x * 0x2545F4914F6CDD1Dull;
    std::memcpy(v.data() + i, &r, std::min<size_t>(8, v.size() - i));
  }
}

// Sum of the bytes of [p, p + n) on the host, eight bytes at a time: byte pairs are added into
// 16-bit lanes (at most 510 per word, so 128 words fit before the lanes are folded).
inline uint64_t HostByteSum(const void* p, uint64_t n) {
  const auto* b = static_cast<const unsigned char*>(p);
  uint64_t sum = 0;
  uint64_t i = 0;
  constexpr uint64_t kLow = 0x00FF00FF00FF00FFull;
  while (n - i >= 8) {
    uint64_t lanes = 0;
    for (int k = 0; k < 128 && n - i >= 8; ++k, i += 8) {
      uint64_t w;
      std::memcpy(&w, b + i, 8);
      lanes += (w & kLow) + ((w >> 8) & kLow);
    }
    for (int lane = 0; lane < 4; ++lane) sum += (lanes >> (16 * lane)) & 0xFFFF;
  }
  for (; i < n; ++i) sum += b[i];
  return sum;
}

inline uint64_t ByteSum(const std::vector<unsigned char>& v) {
  return HostByteSum(v.data(), v.size());
}

// Random registrations, writes, reads (half of them read-only), trims and steps; every use
// sees the bytes last written, and a block of at least 2 MiB keeps its address.
inline void ContentSurvivesRandomMovesAndAddressesStay(DeviceHarness& d) {
  PolicyOptions o;
  o.min_victim_bytes = 2 * kMiB;
  SEEDANCE_MANAGER_OR_SKIP(m, d, 256 * kMiB, 1024 * kMiB, o);
  std::mt19937_64 rng(7);
  struct Live {
    uint64_t size;
    void* address;
    uint64_t sum;
  };
  std::map<BufferId, Live> live;
  std::vector<unsigned char> host;
  for (int op = 0; op < 600; ++op) {
    if (live.size() < 24 && rng() % 3 == 0) {
      uint64_t size = (rng() % 2 ? 4 : 32) * kMiB + (rng() % 4096);
      auto id = m->Register(size);
      ASSERT_TRUE(id.has_value()) << id.error().ToString();
      void* p = m->Acquire(*id).value();
      host.resize(size);
      FillRandom(host, rng);
      ASSERT_TRUE(d.Write(p, host.data(), size));
      live[*id] = {size, p, ByteSum(host)};
      ASSERT_TRUE(m->Release(*id).ok());
    } else if (!live.empty()) {
      auto it = std::next(live.begin(), static_cast<long>(rng() % live.size()));
      const void* p = nullptr;
      if (rng() % 2) {
        auto w = m->Acquire(it->first);
        ASSERT_TRUE(w.has_value()) << w.error().ToString();
        p = *w;
        if (rng() % 2) {  // rewritten: its kept copy, if any, is stale now
          ASSERT_EQ(d.Sum(p, it->second.size), it->second.sum) << "op " << op;
          host.resize(it->second.size);
          FillRandom(host, rng);
          ASSERT_TRUE(d.Write(*w, host.data(), host.size()));
          it->second.sum = ByteSum(host);
        }
      } else {
        auto r = m->AcquireRead(it->first);
        ASSERT_TRUE(r.has_value()) << r.error().ToString();
        p = *r;
      }
      if (it->second.size >= 2 * kMiB) {
        EXPECT_EQ(p, it->second.address) << "address moved";
      }
      ASSERT_EQ(d.Sum(p, it->second.size), it->second.sum) << "op " << op;
      auto found = m->Lookup(static_cast<const char*>(p) + it->second.size - 1);
      ASSERT_TRUE(found.has_value());
      EXPECT_EQ(*found, it->first);
      ASSERT_TRUE(m->Release(it->first).ok());
    }
    if (rng() % 7 == 0) m->Trim();
    m->Step();
  }
  const TrimStats s = m->Stats();
  EXPECT_GT(s.bytes_moved_down, 0u);
  EXPECT_GT(s.bytes_down_without_copy, 0u);
  EXPECT_LE(s.tiers[0].used, s.tiers[0].capacity);
  EXPECT_LE(s.tiers[0].peak_used, s.tiers[0].capacity);
}

// A graph captured with the buffer's address still works after the buffer went to the slower
// tier and came back: the address is the same and the content too.
inline void CapturedGraphStillWorksAfterItsBufferWasMovedAndBack(DeviceHarness& d) {
  PolicyOptions o;
  o.min_victim_bytes = 2 * kMiB;
  o.low_watermark = 0.25;  // a Trim() moves the 64 MiB buffer off the 128 MiB budget
  SEEDANCE_MANAGER_OR_SKIP(m, d, 128 * kMiB, 256 * kMiB, o);
  const uint64_t size = 64 * kMiB;
  auto id = m->Register(size).value();
  void* p = m->Acquire(id).value();
  std::vector<unsigned char> host(size, 41);
  ASSERT_TRUE(d.Write(p, host.data(), size));
  void* graph = d.CaptureAddOne(p, size);
  ASSERT_NE(graph, nullptr);
  ASSERT_TRUE(m->Release(id).ok());
  m->Step();  // released a step ago: idle, a victim
  ASSERT_GE(m->Trim(), 1u);
  EXPECT_EQ(m->TierOf(id).value(), 1);  // on the slower tier now
  EXPECT_EQ(m->Stats().tiers[0].used, 0u);
  void* back = m->Acquire(id).value();
  EXPECT_EQ(back, p);  // same address: the captured graph still points at it
  ASSERT_TRUE(d.Launch(graph));
  EXPECT_EQ(d.Sum(back, size), 42ull * size);
  d.Destroy(graph);
  ASSERT_TRUE(m->Release(id).ok());
}

// Occupancy is the bytes the manager backs against its budget, granule rounding included.
inline void OccupancyIsTheManagersOwnBytesAgainstItsBudget(DeviceHarness& d) {
  PolicyOptions o;
  SEEDANCE_MANAGER_OR_SKIP(m, d, 512 * kMiB, 512 * kMiB, o);
  auto a = m->Register(100 * kMiB).value();
  auto b = m->Register(1000).value();  // below the granularity
  const TrimStats s = m->Stats();
  EXPECT_EQ(s.tiers[0].capacity, 512 * kMiB);
  EXPECT_GE(s.tiers[0].used, 100 * kMiB + 1000);
  EXPECT_LE(s.tiers[0].used, 100 * kMiB + 4 * kMiB);  // granularity rounding only
  EXPECT_TRUE(m->Unregister(a).ok());
  EXPECT_TRUE(m->Unregister(b).ok());
  EXPECT_EQ(m->Stats().tiers[0].used, 0u);
}

// A buffer released while work issued on it still runs is saved complete: the move waits for
// the work (the release contract), it never copies a half-written state.
inline void MoveWaitsForWorkIssuedBeforeRelease(DeviceHarness& d) {
  PolicyOptions o;
  o.min_victim_bytes = 2 * kMiB;
  o.low_watermark = 0.25;
  SEEDANCE_MANAGER_OR_SKIP(m, d, 128 * kMiB, 256 * kMiB, o);
  const uint64_t size = 64 * kMiB;
  auto id = m->Register(size).value();
  void* p = m->Acquire(id).value();
  std::vector<unsigned char> zeros(size, 0);
  ASSERT_TRUE(d.Write(p, zeros.data(), size));
  constexpr int kTimes = 100;
  ASSERT_TRUE(d.AddOneManyAsync(p, size, kTimes));  // still running when released
  ASSERT_TRUE(m->Release(id).ok());
  m->Step();
  ASSERT_GE(m->Trim(), 1u);
  ASSERT_EQ(m->TierOf(id).value(), 1);
  const void* back = m->AcquireRead(id).value();
  EXPECT_EQ(d.Sum(back, size), uint64_t{kTimes} * size);
  ASSERT_TRUE(m->Release(id).ok());
}

// With capture_safe, a trim on one thread while another thread captures a graph in global
// mode: the capture survives, and the trimmed buffer's content is intact wherever it ended up.
inline void TrimOnAnotherThreadKeepsAGraphCapture(DeviceHarness& d) {
  PolicyOptions o;
  o.min_victim_bytes = 2 * kMiB;
  o.low_watermark = 0.25;
  SEEDANCE_MANAGER_OR_SKIP(m, d, 128 * kMiB, 256 * kMiB, o, 64 * kMiB, /*capture_safe=*/true);
  const uint64_t size = 32 * kMiB;
  auto captured = m->Register(size).value();
  auto trimmed = m->Register(size).value();
  std::vector<unsigned char> host(size, 7);
  void* c = m->Acquire(captured).value();  // stays acquired: the graph uses it
  ASSERT_TRUE(d.Write(c, host.data(), size));
  void* t = m->Acquire(trimmed).value();
  ASSERT_TRUE(d.Write(t, host.data(), size));
  ASSERT_TRUE(m->Release(trimmed).ok());
  m->Step();
  size_t moved = 0;
  ASSERT_TRUE(d.CaptureAddOneWhile(c, size, [&] { moved = m->Trim(); }))
      << "the trim broke the capture";
  std::printf("[ info ] the trim during the capture moved %zu buffer(s)\n", moved);
  EXPECT_EQ(d.Sum(c, size), 8ull * size);
  const void* back = m->AcquireRead(trimmed).value();
  EXPECT_EQ(d.Sum(back, size), 7ull * size) << "moved " << moved;
  ASSERT_TRUE(m->Release(trimmed).ok());
  ASSERT_TRUE(m->Release(captured).ok());
}

// More small buffers than the small-block range holds: the rest get room of their own, all
// within the budget, and all keep their content.
inline void SmallBuffersBeyondTheSmallBlockRangeStillWork(DeviceHarness& d) {
  PolicyOptions o;
  o.min_victim_bytes = 0;
  SEEDANCE_MANAGER_OR_SKIP(m, d, 64 * kMiB, 256 * kMiB, o, /*small_arena=*/4 * kMiB);
  std::vector<std::pair<BufferId, uint64_t>> ids;  // 48 × 1 MiB: 12 times the range
  for (int i = 0; i < 48; ++i) {
    auto id = m->Register(kMiB);
    ASSERT_TRUE(id.has_value()) << "buffer " << i << ": " << id.error().ToString();
    void* p = m->Acquire(*id).value();
    std::vector<unsigned char> host(kMiB, static_cast<unsigned char>(i));
    ASSERT_TRUE(d.Write(p, host.data(), kMiB));
    ASSERT_TRUE(m->Release(*id).ok());
    ids.emplace_back(*id, uint64_t{static_cast<unsigned char>(i)} * kMiB);
    m->Step();
  }
  for (auto [id, sum] : ids) {
    auto p = m->AcquireRead(id);
    ASSERT_TRUE(p.has_value()) << p.error().ToString();
    EXPECT_EQ(d.Sum(*p, kMiB), sum);
    ASSERT_TRUE(m->Release(id).ok());
  }
  EXPECT_LE(m->Stats().tiers[0].peak_used, 64 * kMiB);
  for (auto [id, sum] : ids) ASSERT_TRUE(m->Unregister(id).ok());
  EXPECT_EQ(m->Stats().tiers[0].used, 0u);
}

// Buffers registered with the zero-block codec (always) cross encoded and come back exact: a
// buffer of several codec chunks (8 MiB on the GPU) with a short last block, small ones, half
// zero in alternate blocks, and one whose every block has only its last byte set (never zero:
// it crosses as it is). Twice by Trim() (synchronous), then by idle trims on Step() (with
// async_copies: the copy worker runs the codec), and once rewritten.
inline void ZeroBlockBuffersCrossEncodedAndComeBackExact(DeviceHarness& d) {
  for (bool async : {false, true}) {
    SCOPED_TRACE(async ? "idle trims, async copies" : "Trim()");
    PolicyOptions o;
    o.min_victim_bytes = 0;
    o.low_watermark = 0;  // Trim() moves every idle buffer
    o.occupancy_trigger = 2;
    o.async_copies = async;
    o.idle_steps = 2;
    o.idle_share_trigger = async ? 0.01 : 2;  // only the async run trims on Step()
    SEEDANCE_MANAGER_OR_SKIP(m, d, 128 * kMiB, 256 * kMiB, o);
    std::mt19937_64 rng(11);
    struct Buffer {
      BufferId id;
      uint64_t size;
      void* address;
      uint64_t sum;
      bool dense;
    };
    std::vector<Buffer> buffers;
    uint64_t encodable = 0;
    std::vector<unsigned char> host;
    auto fill = [&](const Buffer& b, int layout) {
      host.assign(b.size, 0);
      if (layout == 0) {  // 9 blocks in 10 zero
        FillRandom(host, rng);
        for (uint64_t at = 0; at < b.size; at += 256) {
          if (rng() % 10 != 0)
            std::memset(host.data() + at, 0, std::min<uint64_t>(256, b.size - at));
        }
        host[b.size - 1] = 0x77;  // the short last block is non-zero
      } else if (layout == 1) {   // every other block zero
        FillRandom(host, rng);
        for (uint64_t at = 256; at < b.size; at += 512) {
          std::memset(host.data() + at, 0, std::min<uint64_t>(256, b.size - at));
        }
      } else {  // the last byte of every block set: nothing to leave out
        for (uint64_t at = 255; at < b.size; at += 256) host[at] = 1;
        host[b.size - 1] = 1;
      }
    };
    const std::pair<uint64_t, int> shapes[] = {
        {20 * kMiB + 4097, 0}, {3 * kMiB, 1}, {300 * 1024 + 5, 0}, {4 * kMiB + 256, 2}};
    for (auto [size, layout] : shapes) {
      auto id = m->Register(size);
      ASSERT_TRUE(id.has_value()) << id.error().ToString();
      ASSERT_TRUE(m->SetCodec(*id, BufferCodec::kZeroBlocksAlways).ok());
      void* p = m->Acquire(*id).value();
      Buffer b{*id, size, p, 0, layout == 2};
      fill(b, layout);
      ASSERT_TRUE(d.Write(p, host.data(), size));
      b.sum = ByteSum(host);
      ASSERT_TRUE(m->Release(*id).ok());
      buffers.push_back(b);
      if (!b.dense) encodable += size;
    }
    // Async: idle trims on Step(), 4, then 5, then 6 steps a round. Equal gaps between the
    // rounds' acquires would teach the manager a period, and its prefetch (due a step before
    // the next use) would bring a buffer back before this checks it, whenever the copy worker
    // lands the move down before that step (a scheduling race under load).
    int round = 0;
    auto move_all_down = [&] {
      if (async) {
        const int steps = 4 + round++;
        for (int i = 0; i < steps; ++i) m->Step();
      } else {
        m->Step();
        m->Trim();
      }
      for (const Buffer& b : buffers) {
        auto tier = m->TierOf(b.id);  // lands moves in flight
        ASSERT_TRUE(tier.has_value());
        ASSERT_EQ(*tier, 1) << "buffer of " << b.size << " bytes not moved";
      }
    };
    auto check_all = [&](bool read_only) {
      for (const Buffer& b : buffers) {
        const void* p = nullptr;
        if (read_only) {
          auto r = m->AcquireRead(b.id);
          ASSERT_TRUE(r.has_value()) << r.error().ToString();
          p = *r;
        } else {
          auto w = m->Acquire(b.id);
          ASSERT_TRUE(w.has_value()) << w.error().ToString();
          p = *w;
        }
        if (b.size >= 2 * kMiB) {
          EXPECT_EQ(p, b.address) << "address moved";
        }
        ASSERT_EQ(d.Sum(p, b.size), b.sum) << "buffer of " << b.size << " bytes";
        ASSERT_TRUE(m->Release(b.id).ok());
      }
    };
    move_all_down();
    TrimStats s = m->Stats();
    EXPECT_EQ(s.bytes_moved_encoded, encodable);
    EXPECT_EQ(s.codec_declined, 1u) << "the dense one";
    // The slower tier holds the dense buffer whole, the others by their non-zero blocks: about
    // a tenth of 20.3 MiB and half of 3 MiB.
    const uint64_t dense = 4 * kMiB + 256;
    EXPECT_GE(s.tiers[1].used, dense);
    EXPECT_LT(s.tiers[1].used, dense + 4 * kMiB);
    EXPECT_GT(s.bytes_codec_saved, 19 * kMiB);
    check_all(/*read_only=*/true);
    move_all_down();  // to the kept copies, encoded ones too
    s = m->Stats();
    EXPECT_GE(s.bytes_down_without_copy, encodable + dense);
    check_all(/*read_only=*/false);
    Buffer& big = buffers[0];
    void* p = m->Acquire(big.id).value();
    fill(big, 1);  // rewritten with another layout
    ASSERT_TRUE(d.Write(p, host.data(), big.size));
    big.sum = ByteSum(host);
    ASSERT_TRUE(m->Release(big.id).ok());
    move_all_down();
    check_all(/*read_only=*/false);
    EXPECT_LE(m->Stats().tiers[0].peak_used, m->Stats().tiers[0].capacity);
  }
}

// Instantiates every case for a harness type.
#define SEEDANCE_DEVICE_TIER_CASES(Suite, Harness)                                      \
  TEST(Suite, ContentSurvivesRandomMovesAndAddressesStay) {                             \
    Harness d;                                                                          \
    ::seedance::trim::testing::ContentSurvivesRandomMovesAndAddressesStay(d);           \
  }                                                                                     \
  TEST(Suite, CapturedGraphStillWorksAfterItsBufferWasMovedAndBack) {                   \
    Harness d;                                                                          \
    ::seedance::trim::testing::CapturedGraphStillWorksAfterItsBufferWasMovedAndBack(d); \
  }                                                                                     \
  TEST(Suite, OccupancyIsTheManagersOwnBytesAgainstItsBudget) {                         \
    Harness d;                                                                          \
    ::seedance::trim::testing::OccupancyIsTheManagersOwnBytesAgainstItsBudget(d);       \
  }                                                                                     \
  TEST(Suite, MoveWaitsForWorkIssuedBeforeRelease) {                                    \
    Harness d;                                                                          \
    ::seedance::trim::testing::MoveWaitsForWorkIssuedBeforeRelease(d);                  \
  }                                                                                     \
  TEST(Suite, TrimOnAnotherThreadKeepsAGraphCapture) {                                  \
    Harness d;                                                                          \
    ::seedance::trim::testing::TrimOnAnotherThreadKeepsAGraphCapture(d);                \
  }                                                                                     \
  TEST(Suite, SmallBuffersBeyondTheSmallBlockRangeStillWork) {                          \
    Harness d;                                                                          \
    ::seedance::trim::testing::SmallBuffersBeyondTheSmallBlockRangeStillWork(d);        \
  }                                                                                     \
  TEST(Suite, ZeroBlockBuffersCrossEncodedAndComeBackExact) {                           \
    Harness d;                                                                          \
    ::seedance::trim::testing::ZeroBlockBuffersCrossEncodedAndComeBackExact(d);         \
  }

}  // namespace seedance::trim::testing
