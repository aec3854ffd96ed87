// The C API shared by threads: one manager, several threads registering, acquiring, writing,
// checking and stepping at once; every buffer keeps its own content.
#include <gtest/gtest.h>

#include <cstring>
#include <thread>
#include <vector>

#include "seedance/trim_c.h"

namespace {

TEST(TrimCApiTest, ThreadsShareOneManager) {
  sd_trim_policy policy;
  sd_trim_policy_defaults(&policy);
  policy.min_victim_bytes = 0;
  policy.idle_steps = 3;
  policy.async_copies = 1;
  sd_trim_manager* m = nullptr;
  ASSERT_EQ(sd_trim_create_host_keeping(1 << 20, 32 << 20, &policy, &m), SD_TRIM_OK)
      << sd_trim_last_error(nullptr);
  constexpr int kThreads = 4;
  constexpr int kBuffers = 6;
  constexpr uint64_t kSize = 96 << 10;  // 4 × 6 × 96 KiB = 2.25 MiB on a 1 MiB fast tier
  std::vector<int> failures(kThreads, 0);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      sd_trim_buffer ids[kBuffers];
      unsigned char version[kBuffers] = {};
      for (int i = 0; i < kBuffers; ++i) {
        if (sd_trim_register(m, kSize, "b", nullptr, &ids[i]) != SD_TRIM_OK) ++failures[t];
      }
      for (int round = 0; round < 150; ++round) {
        const int i = round % kBuffers;
        void* p = nullptr;
        if (sd_trim_acquire(m, ids[i], &p) != SD_TRIM_OK) {
          ++failures[t];
          continue;
        }
        auto* b = static_cast<unsigned char*>(p);
        if (b[0] != version[i] || b[kSize - 1] != version[i]) ++failures[t];
        version[i] = static_cast<unsigned char>(round + t + 1);
        std::memset(p, version[i], kSize);
        sd_trim_buffer found = 0;
        if (sd_trim_lookup(m, b + 100, &found) != SD_TRIM_OK || found != ids[i]) ++failures[t];
        if (sd_trim_release(m, ids[i]) != SD_TRIM_OK) ++failures[t];
        sd_trim_step(m);
      }
      for (int i = 0; i < kBuffers; ++i) {
        if (sd_trim_unregister(m, ids[i]) != SD_TRIM_OK) ++failures[t];
      }
    });
  }
  for (auto& th : threads) th.join();
  for (int t = 0; t < kThreads; ++t) EXPECT_EQ(failures[t], 0) << "thread " << t;
  sd_trim_stats stats;
  sd_trim_get_stats(m, &stats);
  EXPECT_GT(stats.bytes_moved_down, 0u);
  EXPECT_LE(stats.fast_peak_used, stats.fast_capacity);
  EXPECT_EQ(stats.buffers, 0u);
  sd_trim_destroy(m);
}

TEST(TrimCApiTest, ErrorsNameTheirReasonPerThread) {
  sd_trim_manager* m = nullptr;
  sd_trim_cuda_options o{};
  o.device = 0;  // no budget: refused before any device is touched
  EXPECT_EQ(sd_trim_create_cuda(&o, nullptr, &m), SD_TRIM_EINVAL);
  EXPECT_NE(std::strstr(sd_trim_last_error(nullptr), "device_budget"), nullptr);
  EXPECT_EQ(m, nullptr);
  ASSERT_EQ(sd_trim_create_host_keeping(1 << 20, 1 << 20, nullptr, &m), SD_TRIM_OK);
  void* p = nullptr;
  EXPECT_EQ(sd_trim_acquire(m, 12345, &p), SD_TRIM_ENOTFOUND);
  std::thread([] { EXPECT_STREQ(sd_trim_last_error(nullptr), ""); }).join();
  EXPECT_NE(std::strstr(sd_trim_last_error(m), "unknown buffer"), nullptr);
  sd_trim_destroy(m);
}

}  // namespace
