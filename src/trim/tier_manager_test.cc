#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <random>

#include "seedance/trim.h"
#include "trim/size_units_testing.h"

namespace seedance::trim {
namespace {

std::unique_ptr<TierManager> Make(uint64_t fast, uint64_t slow, PolicyOptions o = {}) {
  std::vector<std::unique_ptr<Tier>> tiers;
  tiers.push_back(MakeHostTier("fast", fast));
  tiers.push_back(MakeHostTier("slow", slow));
  return TierManager::Create(std::move(tiers), o).value();
}

PolicyOptions SmallBuffers() {
  PolicyOptions o;
  o.min_victim_bytes = 0;  // host tests use small buffers
  return o;
}

uint64_t Checksum(const void* p, uint64_t n) {
  uint64_t h = 1469598103934665603ull;
  auto* b = static_cast<const unsigned char*>(p);
  for (uint64_t i = 0; i < n; ++i) h = (h ^ b[i]) * 1099511628211ull;
  return h;
}

// Fills `n` bytes with random bytes; with `sparse`, most 256-byte blocks stay zero (for the
// zero-block codec).
void Fill(unsigned char* p, uint64_t n, std::mt19937& rng, bool sparse) {
  for (uint64_t i = 0; i < n; ++i) p[i] = static_cast<unsigned char>(rng());
  if (!sparse) return;
  for (uint64_t block = 0; block < n; block += 256) {
    if (rng() % 4 != 0) std::memset(p + block, 0, std::min<uint64_t>(256, n - block));
  }
}

TEST(TierManagerTest, ContentSurvivesAnySequenceOfMoves) {
  for (uint32_t seed : {1u, 2u, 3u, 101u, 102u, 103u, 201u, 202u, 203u, 301u, 302u, 303u}) {
    PolicyOptions o = SmallBuffers();
    // Seeds 1xx and 3xx: the same sequences with moves copied in the background.
    o.async_copies = seed % 200 > 100;
    // Seeds 2xx and 3xx: two thirds of the buffers, mostly zero, cross through the zero-block
    // codec (always: the decision from measured rates is CodecRatesTest's).
    const bool codec = seed > 200;
    o.idle_steps = 5;  // idle trims often, whatever the sequence
    // Seeds 2 and 102: a slow tier that fills up with kept copies (room made by dropping them).
    auto m = Make(256 * kKiB, seed % 100 == 2 ? 2304 * kKiB : 4096 * kKiB, o);
    std::mt19937 rng(seed);
    std::map<BufferId, std::pair<uint64_t, uint64_t>> live;  // id → (size, checksum)
    auto pick = [&] { return std::next(live.begin(), static_cast<long>(rng() % live.size())); };
    for (int op = 0; op < 4000; ++op) {
      switch (rng() % 7) {
        case 0: {  // register and fill
          uint64_t size = 256 + rng() % (16 * kKiB);
          if (m->Stats().registered_bytes + size > 2048 * kKiB) break;  // half the slow tier
          // Half in one of three groups: with async copies, a stall brings a group back.
          const uint32_t group = rng() % 6;
          auto id = m->Register(size, {}, group < 3 ? "g" + std::to_string(group) : "");
          if (!id) break;
          const bool encoded = codec && rng() % 3 != 0;
          if (encoded) {
            ASSERT_TRUE(m->SetCodec(*id, BufferCodec::kZeroBlocksAlways).ok());
          }
          auto p = m->Acquire(*id);
          ASSERT_TRUE(p.has_value()) << p.error().ToString();
          Fill(static_cast<unsigned char*>(*p), size, rng, encoded);
          live[*id] = {size, Checksum(*p, size)};
          ASSERT_TRUE(m->Release(*id).ok());
          break;
        }
        case 2: {  // acquire, verify, maybe rewrite, release
          if (live.empty()) break;
          auto it = pick();
          auto p = m->Acquire(it->first);
          ASSERT_TRUE(p.has_value()) << p.error().ToString();
          ASSERT_EQ(Checksum(*p, it->second.first), it->second.second)
              << "seed " << seed << " op " << op;
          if (rng() % 2) {
            static_cast<unsigned char*>(*p)[rng() % it->second.first] ^= 0x5A;
            it->second.second = Checksum(*p, it->second.first);
          }
          ASSERT_TRUE(m->Release(it->first).ok());
          break;
        }
        case 3:
          m->Step();
          // A prefetch hint now and then: on the copy worker with async copies; refused
          // (no room) is fine, anything else is not.
          if (!live.empty() && rng() % 2 == 0) {
            Status s = m->StartPrefetch(pick()->first);
            ASSERT_TRUE(s.ok() || s.code() == StatusCode::kResourceExhausted) << s.ToString();
          }
          break;
        case 4:
          m->Trim();
          break;
        case 5: {
          if (live.empty()) break;
          auto it = pick();
          ASSERT_TRUE(m->Unregister(it->first).ok());
          live.erase(it);
          break;
        }
        case 1:
        case 6: {  // acquire to read only, verify, release
          if (live.empty()) break;
          auto it = pick();
          auto p = m->AcquireRead(it->first);
          ASSERT_TRUE(p.has_value()) << p.error().ToString();
          ASSERT_EQ(Checksum(*p, it->second.first), it->second.second)
              << "seed " << seed << " op " << op;
          ASSERT_TRUE(m->Release(it->first).ok());
          break;
        }
      }
    }
    for (auto& [id, v] : live) {
      auto p = m->Acquire(id);
      ASSERT_TRUE(p.has_value());
      EXPECT_EQ(Checksum(*p, v.first), v.second);
      ASSERT_TRUE(m->Release(id).ok());
    }
    auto st = m->Stats();
    EXPECT_GT(st.bytes_moved_down, 0u) << "the test must exercise moves";
    EXPECT_GT(st.bytes_moved_up, 0u);
    EXPECT_GT(st.bytes_down_without_copy, 0u) << "and moves to a kept copy, seed " << seed;
    if (codec) {
      EXPECT_GT(st.bytes_moved_encoded, 0u) << "and encoded moves, seed " << seed;
      EXPECT_GT(st.bytes_codec_saved, 0u);
    } else {
      EXPECT_EQ(st.bytes_moved_encoded, 0u);
    }
  }
}

TEST(TierManagerTest, ABufferOnlyReadSinceItCameBackMovesDownWithoutACopy) {
  auto m = Make(36 * kKiB, 1024 * kKiB, SmallBuffers());
  auto a = *m->Register(32 * kKiB);
  std::memset(*m->Acquire(a), 7, 32 * kKiB);
  ASSERT_TRUE(m->Release(a).ok());
  m->Step();
  ASSERT_EQ(m->Trim(), 1u);
  EXPECT_EQ(m->Stats().bytes_down_without_copy, 0u) << "written: the first move copies";
  auto r = m->AcquireRead(a);  // back up; the slow tier keeps its copy
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(static_cast<const unsigned char*>(*r)[100], 7);
  ASSERT_TRUE(m->Release(a).ok());
  EXPECT_EQ(m->Stats().retained_bytes, 32 * kKiB);
  EXPECT_EQ(m->Stats().tiers[1].used, 32 * kKiB);
  m->Step();
  ASSERT_EQ(m->Trim(), 1u);
  TrimStats s = m->Stats();
  EXPECT_EQ(*m->TierOf(a), 1);
  EXPECT_EQ(s.bytes_moved_down, 64 * kKiB);
  EXPECT_EQ(s.bytes_down_without_copy, 32 * kKiB) << "only read: it went down to its copy";
  EXPECT_EQ(s.retained_bytes, 0u);
  EXPECT_EQ(s.tiers[0].used, 0u);
  // Written after coming back: the kept copy is stale, dropped, and the next move copies.
  auto w = m->Acquire(a);
  ASSERT_TRUE(w.has_value());
  EXPECT_EQ(m->Stats().retained_bytes, 0u);
  EXPECT_EQ(m->Stats().tiers[1].used, 0u);
  std::memset(*w, 9, 32 * kKiB);
  ASSERT_TRUE(m->Release(a).ok());
  m->Step();
  ASSERT_EQ(m->Trim(), 1u);
  EXPECT_EQ(m->Stats().bytes_down_without_copy, 32 * kKiB);
  EXPECT_EQ(m->Stats().bytes_moved_down, 96 * kKiB);
  r = m->AcquireRead(a);
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(static_cast<const unsigned char*>(*r)[100], 9);
  EXPECT_EQ(static_cast<const unsigned char*>(*r)[32 * kKiB - 1], 9);
  ASSERT_TRUE(m->Release(a).ok());
}

TEST(TierManagerTest, AStallOnAGroupBringsItsOtherBuffersBackInTheBackground) {
  PolicyOptions o = SmallBuffers();
  o.async_copies = true;
  o.idle_steps = 2;
  o.idle_share_trigger = 0.1;  // trims whatever has been idle for 2 steps
  auto m = Make(1024 * kKiB, 4096 * kKiB, o);
  std::vector<BufferId> layers;
  for (int i = 0; i < 4; ++i) {
    auto id = *m->Register(64 * kKiB, "layer", "model");
    std::memset(*m->Acquire(id), i + 1, 64 * kKiB);
    ASSERT_TRUE(m->Release(id).ok());
    layers.push_back(id);
  }
  auto loner = *m->Register(64 * kKiB, "loner");  // in no group
  for (int i = 0; i < 3; ++i) m->Step();
  for (BufferId id : layers) ASSERT_EQ(*m->TierOf(id), 1);
  ASSERT_EQ(*m->TierOf(loner), 1);
  ASSERT_TRUE(m->AcquireRead(layers[0]).has_value());  // the stall
  EXPECT_EQ(m->Stats().stalls, 1u);
  ASSERT_TRUE(m->Release(layers[0]).ok());
  for (int i = 1; i < 4; ++i) {
    EXPECT_EQ(*m->TierOf(layers[i]), 0) << "brought back with its group";
    auto p = m->AcquireRead(layers[i]);
    ASSERT_TRUE(p.has_value());
    EXPECT_EQ(static_cast<const unsigned char*>(*p)[1000], i + 1);
    ASSERT_TRUE(m->Release(layers[i]).ok());
  }
  EXPECT_EQ(*m->TierOf(loner), 1);
  EXPECT_EQ(m->Stats().stalls, 1u);
  EXPECT_EQ(m->Stats().prefetches, 3u);
}

TEST(TierManagerTest, KeptCopiesAreDroppedWhenTheSlowTierNeedsRoom) {
  PolicyOptions o = SmallBuffers();
  o.low_watermark = 0.1;  // Trim() moves every buffer it can
  auto m = Make(100 * kKiB, 64 * kKiB, o);
  auto a = *m->Register(40 * kKiB);
  std::memset(*m->Acquire(a), 1, 40 * kKiB);
  ASSERT_TRUE(m->Release(a).ok());
  m->Step();
  ASSERT_EQ(m->Trim(), 1u);
  ASSERT_TRUE(m->AcquireRead(a).has_value());  // held: `a` cannot be the victim below
  EXPECT_EQ(m->Stats().retained_bytes, 40 * kKiB);
  auto b = *m->Register(50 * kKiB);  // 90% of the fast tier
  std::memset(*m->Acquire(b), 2, 50 * kKiB);
  ASSERT_TRUE(m->Release(b).ok());
  m->Step();
  // `b` needs 50 KiB of a 64 KiB slow tier that holds a's 40 KiB copy: the copy goes.
  ASSERT_EQ(m->Trim(), 1u);
  EXPECT_EQ(*m->TierOf(b), 1);
  EXPECT_EQ(m->Stats().retained_bytes, 0u);
  ASSERT_TRUE(m->Release(a).ok());
  EXPECT_EQ(*m->TierOf(a), 0);
  auto pa = m->AcquireRead(a);
  EXPECT_EQ(static_cast<const unsigned char*>(*pa)[39 * kKiB], 1);
  ASSERT_TRUE(m->Release(a).ok());
  auto pb = m->AcquireRead(b);
  ASSERT_TRUE(pb.has_value()) << pb.error().ToString();
  EXPECT_EQ(static_cast<const unsigned char*>(*pb)[49 * kKiB], 2);
  ASSERT_TRUE(m->Release(b).ok());
}

TEST(TierManagerTest, AnAcquiredBufferIsNeverMoved) {
  auto m = Make(100 * kKiB, 1000 * kKiB, SmallBuffers());
  auto held = *m->Register(40 * kKiB);
  auto other = *m->Register(40 * kKiB);
  void* p = *m->Acquire(held);
  for (int i = 0; i < 100; ++i) m->Step();  // both idle for long, occupancy 80%
  EXPECT_GT(m->Trim() + m->Stats().trims, 0u);
  EXPECT_EQ(*m->TierOf(held), 0);
  EXPECT_EQ(*m->Acquire(held), p);
  EXPECT_EQ(*m->TierOf(other), 1);
}

TEST(TierManagerTest, OccupancyTriggerTrimsUnderTheLowWatermark) {
  auto m = Make(1000 * kKiB, 4000 * kKiB, SmallBuffers());
  for (int i = 0; i < 19; ++i) ASSERT_TRUE(m->Register(48 * kKiB).has_value());  // 91.2%
  m->Step();
  m->Step();
  m->Step();
  EXPECT_EQ(m->Stats().trims, 0u) << "below 92%: no trim";
  ASSERT_TRUE(m->Register(48 * kKiB).has_value());  // 96%
  m->Step();
  m->Step();
  EXPECT_EQ(m->Stats().trims, 0u) << "two samples are not enough";
  m->Step();
  auto st = m->Stats();
  EXPECT_EQ(st.trims, 1u);
  EXPECT_LE(st.tiers[0].occupancy, 0.80);
  EXPECT_GT(st.trim_latency_p99_us, 0.0);
}

TEST(TierManagerTest, AcquireBringsAMovedBufferBackAndCountsTheStall) {
  auto m = Make(36 * kKiB, 1024 * kKiB, SmallBuffers());  // 32 KiB is 89%: over the watermark
  auto a = *m->Register(32 * kKiB);
  std::memset(*m->Acquire(a), 7, 32 * kKiB);
  ASSERT_TRUE(m->Release(a).ok());
  m->Step();
  ASSERT_EQ(m->Trim(), 1u);
  EXPECT_EQ(*m->TierOf(a), 1);
  auto p = m->Acquire(a);
  ASSERT_TRUE(p.has_value());
  EXPECT_EQ(*m->TierOf(a), 0);
  EXPECT_EQ(static_cast<unsigned char*>(*p)[100], 7);
  EXPECT_EQ(m->Stats().stalls, 1u);
  ASSERT_TRUE(m->Release(a).ok());
  m->Step();
  m->Trim();
  ASSERT_TRUE(m->Prefetch(a).ok());
  EXPECT_EQ(*m->TierOf(a), 0);
  EXPECT_EQ(m->Stats().stalls, 1u) << "a prefetch is not a stall";
}

TEST(TierManagerTest, StartPrefetchCopiesInTheBackgroundAndTheUseIsNoStall) {
  PolicyOptions o = SmallBuffers();
  o.async_copies = true;
  auto m = Make(36 * kKiB, 1024 * kKiB, o);
  auto a = *m->Register(32 * kKiB);
  std::memset(*m->Acquire(a), 9, 32 * kKiB);
  ASSERT_TRUE(m->Release(a).ok());
  m->Step();
  ASSERT_EQ(m->Trim(), 1u);
  ASSERT_EQ(*m->TierOf(a), 1);
  ASSERT_TRUE(m->StartPrefetch(a).ok());
  ASSERT_TRUE(m->StartPrefetch(a).ok()) << "already coming back: nothing more to do";
  auto p = m->Acquire(a);  // waits for the copy if it still runs
  ASSERT_TRUE(p.has_value());
  EXPECT_EQ(static_cast<unsigned char*>(*p)[31 * kKiB], 9);
  ASSERT_TRUE(m->Release(a).ok());
  const TrimStats st = m->Stats();
  EXPECT_EQ(st.stalls, 0u) << "brought back ahead: not a stall";
  EXPECT_EQ(st.prefetches, 1u);
  EXPECT_TRUE(m->StartPrefetch(a).ok()) << "on the fast tier: left as it is";
  EXPECT_EQ(m->StartPrefetch(999).code(), StatusCode::kNotFound);
}

TEST(TierManagerTest, StartPrefetchWithoutTheCopyWorkerBringsTheBufferBackNow) {
  auto m = Make(36 * kKiB, 1024 * kKiB, SmallBuffers());
  auto a = *m->Register(32 * kKiB);
  std::memset(*m->Acquire(a), 4, 32 * kKiB);
  ASSERT_TRUE(m->Release(a).ok());
  m->Step();
  ASSERT_EQ(m->Trim(), 1u);
  ASSERT_TRUE(m->StartPrefetch(a).ok());
  EXPECT_EQ(*m->TierOf(a), 0);
  EXPECT_EQ(m->Stats().stalls, 0u);
}

// The idle share is kept incrementally; it must equal the policy's definition recomputed
// from scratch: bytes not acquired and unused for idle_steps or more, over registered bytes.
TEST(TierManagerTest, IncrementalIdleShareMatchesTheDefinition) {
  PolicyOptions o = SmallBuffers();
  o.idle_steps = 5;
  o.idle_share_trigger = 2;  // never trims: only the bookkeeping is under test
  o.occupancy_trigger = 2;
  o.fragmentation_trigger = 2;
  auto m = Make(64 << 20, 64 << 20, o);
  std::mt19937 rng(99);
  struct Model {
    uint64_t size;
    uint64_t last_used;
    bool acquired;
  };
  std::map<BufferId, Model> model;
  uint64_t step = 0;
  for (int op = 0; op < 5000; ++op) {
    switch (rng() % 5) {
      case 0: {
        uint64_t size = 1 + rng() % 4096;
        auto id = m->Register(size);
        ASSERT_TRUE(id.has_value());
        model[*id] = {size, step, false};
        break;
      }
      case 1: {
        if (model.empty()) break;
        auto it = std::next(model.begin(), static_cast<long>(rng() % model.size()));
        if (it->second.acquired) {
          ASSERT_TRUE(m->Release(it->first).ok());
          it->second.acquired = false;
        } else {
          ASSERT_TRUE(m->Acquire(it->first).has_value());
          it->second.acquired = true;
        }
        it->second.last_used = step;
        break;
      }
      case 2: {
        if (model.empty()) break;
        auto it = std::next(model.begin(), static_cast<long>(rng() % model.size()));
        if (it->second.acquired) break;
        ASSERT_TRUE(m->Unregister(it->first).ok());
        model.erase(it);
        break;
      }
      default:
        m->Step();
        ++step;
    }
    uint64_t total = 0, idle = 0;
    for (const auto& [id, b] : model) {
      total += b.size;
      if (!b.acquired && step >= b.last_used + o.idle_steps) idle += b.size;
    }
    const double want = total == 0 ? 0 : static_cast<double>(idle) / static_cast<double>(total);
    ASSERT_DOUBLE_EQ(m->Stats().idle_share, want) << "op " << op;
  }
}

TEST(TierManagerTest, PeriodicUseIsLearnedAndPrefetchedAheadOfTime) {
  PolicyOptions o = SmallBuffers();
  o.idle_steps = 3;
  o.idle_share_trigger = 0.1;  // trim whatever has been idle for 3 steps
  auto m = Make(1024 * kKiB, 4096 * kKiB, o);
  auto periodic = m->Register(64 * kKiB).value();
  auto steady = m->Register(64 * kKiB).value();
  uint64_t stalls_before_learning = 0;
  for (int step = 0; step < 100; ++step) {
    if (step % 10 == 0) {  // a burst of use every 10 steps
      ASSERT_TRUE(m->Acquire(periodic).has_value());
      ASSERT_TRUE(m->Release(periodic).ok());
    }
    ASSERT_TRUE(m->Acquire(steady).has_value());
    ASSERT_TRUE(m->Release(steady).ok());
    if (step == 5) {
      EXPECT_EQ(m->TierOf(periodic).value(), 1) << "idle for 3+ steps: moved down";
    }
    if (step == 30) stalls_before_learning = m->Stats().stalls;
    m->Step();
  }
  const TrimStats s = m->Stats();
  EXPECT_GE(stalls_before_learning, 1u);        // the first uses stall
  EXPECT_EQ(s.stalls, stalls_before_learning);  // once learned, none
  EXPECT_GE(s.prefetches, 6u);                  // uses at 40, 50, ..., 90 came back early
}

TEST(TierManagerTest, AddressKeepingTierReturnsTheSamePointerWithTheSameContent) {
  for (bool async : {false, true}) {
    SCOPED_TRACE(async ? "async copies" : "sync copies");
    std::vector<std::unique_ptr<Tier>> tiers;
    // The CUDA device tier's semantics on the host: evicted blocks keep their address, give
    // their pages back and fault on access until restored.
    auto keeping = MakeAddressKeepingHostTier("keeping", 512 * kKiB);
    Tier* fast = keeping.get();
    tiers.push_back(std::move(keeping));
    tiers.push_back(MakeHostTier("slow", 4096 * kKiB));
    PolicyOptions o = SmallBuffers();
    o.async_copies = async;
    auto m = TierManager::Create(std::move(tiers), o).value();
    std::mt19937 rng(5);
    std::map<BufferId, std::pair<void*, uint64_t>> first;  // id → (address, checksum)
    for (int round = 0; round < 200; ++round) {
      if (first.size() < 12) {  // 12 × 96 KiB = 1152 KiB of buffers on a 512 KiB budget
        auto id = m->Register(96 * kKiB).value();
        auto p = m->Acquire(id).value();
        for (uint64_t i = 0; i < 96 * kKiB; ++i) static_cast<unsigned char*>(p)[i] = rng();
        first[id] = {p, Checksum(p, 96 * kKiB)};
        ASSERT_TRUE(m->Release(id).ok());
      } else {
        auto it = std::next(first.begin(), static_cast<long>(rng() % first.size()));
        // Read-only uses too: those move down to their kept copy (evicted, no copy).
        const void* p = nullptr;
        if (rng() % 2) {
          auto w = m->Acquire(it->first);
          ASSERT_TRUE(w.has_value()) << w.error().ToString();
          p = *w;
        } else {
          auto r = m->AcquireRead(it->first);
          ASSERT_TRUE(r.has_value()) << r.error().ToString();
          p = *r;
        }
        EXPECT_EQ(p, it->second.first) << "the address must not change across moves";
        EXPECT_EQ(Checksum(p, 96 * kKiB), it->second.second);
        ASSERT_TRUE(m->Release(it->first).ok());
      }
      m->Step();
    }
    EXPECT_GT(m->Stats().bytes_moved_down, 10 * 96 * kKiB);
    EXPECT_GT(m->Stats().bytes_down_without_copy, 0u);
    EXPECT_LE(fast->used(), 512 * kKiB);
    for (const auto& [id, v] : first) EXPECT_TRUE(m->Unregister(id).ok());
    EXPECT_EQ(fast->used(), 0u);
  }
}

}  // namespace
}  // namespace seedance::trim
