#include "trim/host_stream_device.h"

#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "trim/stream_plan.h"

namespace seedance::trim {
namespace {

TEST(HostStreamDeviceTest, CopiesRunInOrderAndTheComputeWaitsForItsOwn) {
  HostStreamDevice d;
  std::vector<std::vector<char>> src, dst;
  std::vector<StreamDevice::Event> done;
  for (int i = 0; i < 16; ++i) {
    src.emplace_back(1 << 20, static_cast<char>('a' + i));
    dst.emplace_back(1 << 20, 0);
    done.push_back(d.CopyAfter(dst.back().data(), src.back().data(), 1 << 20, d.RecordCompute()));
  }
  for (int i = 0; i < 16; ++i) {
    d.ComputeWaits(done[i]);  // on a host: returns once copy i has landed
    EXPECT_EQ(dst[i][0], 'a' + i);
    EXPECT_EQ(dst[i][(1 << 20) - 1], 'a' + i);
  }
  EXPECT_LE(d.host_waits(), 16u);
  d.ComputeWaits(0);  // no event: nothing to wait for
}

// The executor on the host device: every unit reads its own bytes, three iterations long.
TEST(HostStreamDeviceTest, TheExecutorStreamsAModelExactly) {
  std::vector<UnitRecord> records;
  std::vector<std::vector<unsigned char>> host;
  for (int i = 0; i < 12; ++i) {
    records.push_back({static_cast<uint64_t>(4096 * (1 + i % 5)), 1e-4});
    host.emplace_back(records.back().bytes);
    for (size_t b = 0; b < host.back().size(); ++b)
      host.back()[b] = static_cast<unsigned char>(i * 31 + b);
  }
  uint64_t model = 0;
  for (const auto& r : records) model += r.bytes;
  auto plan = PlanStream(records, {.budget = model / 2, .link_bytes_per_second = 1e9});
  ASSERT_TRUE(plan.has_value()) << plan.error().ToString();
  std::vector<StreamUnit> units;
  for (size_t i = 0; i < records.size(); ++i) {
    units.push_back({host[i].data(), host[i].data(), records[i].bytes});
  }
  std::vector<char> ring(plan->ring_bytes);
  HostStreamDevice d;
  StreamExecutor ex(*plan, units, ring.data(), d);
  for (int it = 0; it < 3; ++it) {
    for (size_t i = 0; i < records.size(); ++i) {
      auto p = ex.Begin(i);
      ASSERT_TRUE(p.has_value()) << p.error().ToString();
      ASSERT_EQ(std::memcmp(*p, host[i].data(), records[i].bytes), 0) << "unit " << i;
      if (!plan->resident[i]) {
        EXPECT_GE(static_cast<char*>(*p), ring.data());
        EXPECT_LT(static_cast<char*>(*p), ring.data() + ring.size());
      }
      ASSERT_TRUE(ex.End(i).ok());
    }
  }
  EXPECT_GE(ex.stats().bytes_copied, 3 * plan->streamed_bytes);
}

}  // namespace
}  // namespace seedance::trim
