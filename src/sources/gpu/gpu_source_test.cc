// The gpu source's backends against a stand-in NVML (tests/tools/nvml_stub.c, loaded with
// dlopen exactly as libnvidia-ml.so.1 is) and Jetson sysfs fixtures (tests/data/jetson/).
#include <gtest/gtest.h>
#include <malloc.h>
#include <stdlib.h>

#include <atomic>
#include <fstream>
#include <thread>

#include "sources/gpu/gpu_backend.h"
#include "sources/gpu/gpu_sample.h"
#include "sources/gpu/sampler.h"

namespace seedance::sources::gpu {
namespace {

class NvmlStubTest : public ::testing::Test {
 protected:
  void Script(const std::string& text) {
    path_ = ::testing::TempDir() + "nvml_stub_script_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name();
    std::ofstream(path_) << text;
    setenv("SEEDANCE_NVML_STUB", path_.c_str(), 1);
  }
  void TearDown() override { unsetenv("SEEDANCE_NVML_STUB"); }

  static BackendSettings Settings() {
    BackendSettings s;
    s.backend = "nvml";
    s.nvml_library = SEEDANCE_NVML_STUB;
    return s;
  }
  static std::vector<std::string> Texts(GpuBackend& b) {
    std::vector<std::string> out;
    for (auto& n : b.TakeNotices()) out.push_back(n.text);
    return out;
  }

  std::string path_;
};

double Field(const GpuSample& s, std::string_view name) {
  const SampleField* f = s.Find(name);
  EXPECT_NE(f, nullptr) << name;
  return f == nullptr ? -1 : f->value;
}

TEST_F(NvmlStubTest, ReadsEveryFieldAsScripted) {
  Script(R"(count 2
name 0 NVIDIA H200
uuid 0 GPU-aaaa
series 0 mem_total 1000000
series 0 mem_used 250000 500000
series 0 mem_reserved 1000
series 0 util_gpu 97
series 0 util_mem 40
series 0 power_mw 312500
series 0 energy_mj 7000
series 0 temp 55
series 0 sm_clock 1980
series 0 mem_clock 3201
series 0 pcie_tx_kb 1000
series 0 pcie_rx_kb 2000
gpm 0 1
series 0 gpm_sm_util 88.5
series 0 gpm_sm_occ 41
series 0 gpm_dram_bw 12
series 0 gpm_pcie_tx 5e9
series 0 gpm_pcie_rx 6e9
process 0 4242 123456
process 0 4243 -1
)");
  auto backend = OpenBackend(Settings());
  ASSERT_TRUE(backend.has_value()) << backend.error().ToString();
  GpuBackend& b = **backend;
  EXPECT_EQ(b.name(), "nvml");
  std::vector<GpuSample> samples;
  b.Sample(111, &samples);
  ASSERT_EQ(samples.size(), 2u);
  const GpuSample& s = samples[0];
  EXPECT_EQ(s.name, "NVIDIA H200");
  EXPECT_EQ(s.uuid, "GPU-aaaa");
  EXPECT_EQ(s.time_ns, 111);
  EXPECT_EQ(s.state, "ok");
  EXPECT_EQ(Field(s, "memory_total_bytes"), 1000000);
  EXPECT_EQ(Field(s, "memory_used_bytes"), 250000);
  EXPECT_EQ(Field(s, "memory_free_bytes"), 750000);
  EXPECT_EQ(Field(s, "memory_reserved_bytes"), 1000);
  EXPECT_DOUBLE_EQ(Field(s, "memory_used_pct"), 25);
  EXPECT_EQ(Field(s, "gpu_util_pct"), 97);
  EXPECT_EQ(Field(s, "memory_util_pct"), 40);
  EXPECT_DOUBLE_EQ(Field(s, "power_w"), 312.5);
  EXPECT_DOUBLE_EQ(Field(s, "energy_j"), 7);
  EXPECT_EQ(Field(s, "temperature_c"), 55);
  EXPECT_EQ(Field(s, "sm_clock_mhz"), 1980);
  EXPECT_EQ(Field(s, "memory_clock_mhz"), 3201);
  EXPECT_EQ(Field(s, "pcie_tx_bytes_per_s"), 1000 * 1024);
  EXPECT_EQ(Field(s, "pcie_rx_bytes_per_s"), 2000 * 1024);
  EXPECT_EQ(s.Find("gpm_sm_util_pct"), nullptr) << "GPM needs two readings";
  ASSERT_TRUE(s.processes_known);
  ASSERT_EQ(s.processes.size(), 2u);
  EXPECT_EQ(s.processes[0].pid, 4242u);
  EXPECT_EQ(s.processes[0].used_bytes, 123456);
  EXPECT_EQ(s.processes[1].used_bytes, -1) << "NVML_VALUE_NOT_AVAILABLE";

  samples.clear();
  b.Sample(222, &samples);
  const GpuSample& t = samples[0];
  EXPECT_EQ(Field(t, "memory_used_bytes"), 500000) << "the series advances per reading";
  EXPECT_DOUBLE_EQ(Field(t, "gpm_sm_util_pct"), 88.5);
  EXPECT_DOUBLE_EQ(Field(t, "gpm_sm_occupancy_pct"), 41);
  EXPECT_DOUBLE_EQ(Field(t, "gpm_dram_bw_util_pct"), 12);
  EXPECT_DOUBLE_EQ(Field(t, "gpm_pcie_tx_bytes_per_s"), 5e9);
  EXPECT_DOUBLE_EQ(Field(t, "gpm_pcie_rx_bytes_per_s"), 6e9);
}

TEST_F(NvmlStubTest, FieldsNotSupportedAreLeftOutAndNoticedOncePerDevice) {
  Script(R"(count 1
series 0 util_gpu NS
series 0 power_mw 1000 NS
series 0 temp 40
)");
  auto backend = OpenBackend(Settings());
  ASSERT_TRUE(backend.has_value());
  GpuBackend& b = **backend;
  std::vector<GpuSample> samples;
  int power_notices = 0, util_notices = 0;
  for (int i = 0; i < 6; ++i) {
    samples.clear();
    b.Sample(i, &samples);
    EXPECT_EQ(samples[0].Find("gpu_util_pct"), nullptr);
    EXPECT_EQ(samples[0].Find("power_w") != nullptr, i % 2 == 0);
    EXPECT_EQ(Field(samples[0], "temperature_c"), 40);
    EXPECT_EQ(samples[0].Find("energy_j"), nullptr);  // never scripted: not supported
    for (const std::string& n : Texts(b)) {
      power_notices += n.find("not available (Not Supported (3)): ") != std::string::npos &&
                       n.find("power_w") != std::string::npos;
      util_notices += n.find("gpu_util_pct") != std::string::npos;
    }
  }
  EXPECT_EQ(power_notices, 1);
  EXPECT_EQ(util_notices, 1);
  // The payload simply lacks them.
  std::string json = SampleJson(samples[0]);
  EXPECT_EQ(json.find("gpu_util_pct"), std::string::npos) << json;
}

TEST_F(NvmlStubTest, ALostGpuIsReportedNotFatalAndNoticedOnce) {
  Script(R"(count 2
series 0 temp 40
series 1 temp 41
lost_after 1 2
xid 1 79 2
)");
  auto backend = OpenBackend(Settings());
  ASSERT_TRUE(backend.has_value());
  GpuBackend& b = **backend;
  std::vector<GpuSample> samples;
  int lost_notices = 0, xid_notices = 0;
  for (int i = 0; i < 5; ++i) {
    samples.clear();
    b.Sample(i, &samples);
    ASSERT_EQ(samples.size(), 2u);
    EXPECT_EQ(samples[0].state, "ok");
    EXPECT_EQ(samples[1].state, i < 2 ? "ok" : "lost") << i;
    if (i >= 2) {
      EXPECT_EQ(samples[1].error, "GPU is lost (15)");
      EXPECT_TRUE(samples[1].fields.empty());
    }
    for (auto& n : b.TakeNotices()) {
      if (n.text.find("lost: GPU is lost") != std::string::npos) {
        ++lost_notices;
        EXPECT_TRUE(n.warning);
      }
      xid_notices += n.text.find("Xid 79") != std::string::npos;
    }
  }
  EXPECT_EQ(lost_notices, 1);
  EXPECT_EQ(xid_notices, 1);
  std::string json = SampleJson(samples[1]);
  EXPECT_NE(json.find("\"state\":\"lost\",\"error\":\"GPU is lost (15)\""), std::string::npos)
      << json;
}

TEST_F(NvmlStubTest, ManyProcessesAreListedPastTheFirstBuffer) {
  Script("count 1\nprocesses 0 300 4096\n");
  auto backend = OpenBackend(Settings());
  ASSERT_TRUE(backend.has_value());
  std::vector<GpuSample> samples;
  (*backend)->Sample(1, &samples);
  ASSERT_EQ(samples[0].processes.size(), 300u);
  EXPECT_EQ(samples[0].processes[299].pid, 100299u);
}

TEST_F(NvmlStubTest, MoreProcessesThanTheLimitLeaveTheListOutSayingSoOnce) {
  Script("count 1\nprocesses 0 2000 4096\nseries 0 temp 40\n");
  auto backend = OpenBackend(Settings());
  ASSERT_TRUE(backend.has_value());
  int notes = 0;
  for (int i = 0; i < 3; ++i) {
    std::vector<GpuSample> samples;
    (*backend)->Sample(i, &samples);
    EXPECT_FALSE(samples[0].processes_known);
    EXPECT_TRUE(samples[0].processes.empty());
    EXPECT_EQ(Field(samples[0], "temperature_c"), 40);
    EXPECT_EQ(SampleJson(samples[0]).find("processes"), std::string::npos);
    for (const std::string& n : Texts(**backend)) {
      notes += n.find("more than 1024 processes: the list is left out") != std::string::npos;
    }
  }
  EXPECT_EQ(notes, 1);
}

TEST_F(NvmlStubTest, AnAbsurdDeviceCountIsCutAndFailedHandlesSaidOnce) {
  Script("count 2\nclaim_count 4000000000\n");
  auto backend = OpenBackend(Settings());
  ASSERT_TRUE(backend.has_value()) << backend.error().ToString();
  std::vector<std::string> notes = Texts(**backend);
  std::erase_if(notes, [](const std::string& n) { return n.find("no GPM") != std::string::npos; });
  ASSERT_EQ(notes.size(), 2u) << ::testing::PrintToString(notes);
  EXPECT_EQ(notes[0], "NVML counts 4000000000 GPUs: reading the first 64");
  EXPECT_NE(notes[1].find("62 of 64 GPUs could not be opened (device 2: "), std::string::npos)
      << notes[1];
  std::vector<GpuSample> samples;
  (*backend)->Sample(1, &samples);
  EXPECT_EQ(samples.size(), 2u);
}

TEST_F(NvmlStubTest, ADriverWithoutMemoryV2IsReadWithV1) {
  Script("count 1\nseries 0 mem_total 1000\nseries 0 mem_used 250\nmemory_v2 25\n");
  auto backend = OpenBackend(Settings());
  ASSERT_TRUE(backend.has_value());
  for (int i = 0; i < 2; ++i) {
    std::vector<GpuSample> samples;
    (*backend)->Sample(i, &samples);
    EXPECT_EQ(Field(samples[0], "memory_used_bytes"), 250);
    EXPECT_EQ(Field(samples[0], "memory_free_bytes"), 750);
    EXPECT_EQ(samples[0].Find("memory_reserved_bytes"), nullptr) << "v1 has no reserved";
  }
}

TEST_F(NvmlStubTest, AFailedMemoryReadingIsLeftOutOfThatReadingOnly) {
  Script("count 1\nseries 0 temp 40\nmemory_v2 999\n");
  auto backend = OpenBackend(Settings());
  ASSERT_TRUE(backend.has_value());
  std::vector<GpuSample> samples;
  (*backend)->Sample(1, &samples);
  EXPECT_EQ(samples[0].state, "ok");
  EXPECT_EQ(samples[0].Find("memory_used_bytes"), nullptr);
  EXPECT_EQ(Field(samples[0], "temperature_c"), 40);
}

TEST_F(NvmlStubTest, DevicesChosenByIndexOrUuidAndAnUnknownOneIsAConfigError) {
  Script("count 3\nuuid 2 GPU-cccc\n");
  BackendSettings s = Settings();
  s.devices = {"0", "GPU-cccc"};
  auto backend = OpenBackend(s);
  ASSERT_TRUE(backend.has_value());
  std::vector<GpuSample> samples;
  (*backend)->Sample(1, &samples);
  ASSERT_EQ(samples.size(), 2u);
  EXPECT_EQ(samples[0].index, 0);
  EXPECT_EQ(samples[1].index, 2);

  s.devices = {"7"};
  auto bad = OpenBackend(s);
  ASSERT_FALSE(bad.has_value());
  EXPECT_EQ(bad.error().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(bad.error().message().find("no GPU \"7\" (NVML found 3)"), std::string::npos);
}

TEST_F(NvmlStubTest, NoLibraryOrNoDriverSaysWhy) {
  BackendSettings s = Settings();
  s.nvml_library = "/nonexistent/libnvidia-ml.so.1";
  auto missing = OpenBackend(s);
  ASSERT_FALSE(missing.has_value());
  EXPECT_EQ(missing.error().code(), StatusCode::kNotFound);
  EXPECT_NE(missing.error().message().find("nvml: cannot load /nonexistent/libnvidia-ml.so.1"),
            std::string::npos)
      << missing.error().message();

  Script("init_error 9\n");
  auto no_driver = OpenBackend(Settings());
  ASSERT_FALSE(no_driver.has_value());
  EXPECT_NE(no_driver.error().message().find("nvmlInit failed: Driver Not Loaded (9)"),
            std::string::npos)
      << no_driver.error().message();
}

TEST_F(NvmlStubTest, TenThousandReadingsHoldNoMoreHeap) {
  Script(
      "count 2\nseries 0 temp 40 41\nseries 1 temp 42\nprocesses 0 20 4096\ngpm 0 1\n"
      "series 0 gpm_sm_util 50\n");
  auto backend = OpenBackend(Settings());
  ASSERT_TRUE(backend.has_value());
  std::vector<GpuSample> samples;
  auto round = [&] {
    samples.clear();
    (*backend)->Sample(1, &samples);
    std::string json = SampleJson(samples[0]);
    (*backend)->TakeNotices();
  };
  for (int i = 0; i < 100; ++i) round();
  const size_t before = mallinfo2().uordblks;
  for (int i = 0; i < 10000; ++i) round();
  const size_t after = mallinfo2().uordblks;
  EXPECT_LT(after, before + 16 * 1024) << before << " -> " << after;
}

TEST(JetsonBackend, ReadsAnOrinFixture) {
  BackendSettings s;
  s.backend = "auto";  // NVML first: not there (the stub is not on the loader's path)
  s.nvml_library = "/nonexistent/libnvidia-ml.so.1";
  s.sysfs_root = std::string(SEEDANCE_TEST_DATA) + "/jetson/orin";
  auto backend = OpenBackend(s);
  ASSERT_TRUE(backend.has_value()) << backend.error().ToString();
  GpuBackend& b = **backend;
  EXPECT_EQ(b.name(), "jetson");
  std::vector<GpuSample> samples;
  b.Sample(1'000'000'000, &samples);
  b.Sample(3'000'000'000, &samples);
  ASSERT_EQ(samples.size(), 2u);
  const GpuSample& g = samples[1];
  EXPECT_EQ(g.name, "NVIDIA Jetson AGX Orin Developer Kit");
  EXPECT_EQ(g.uuid, "jetson-17000000.gpu");
  EXPECT_EQ(Field(g, "memory_total_bytes"), 31921592.0 * 1024);
  EXPECT_EQ(Field(g, "memory_free_bytes"), 27921592.0 * 1024);
  EXPECT_EQ(Field(g, "memory_used_bytes"), 4000000.0 * 1024);
  EXPECT_DOUBLE_EQ(Field(g, "gpu_util_pct"), 47.5);
  EXPECT_EQ(Field(g, "sm_clock_mhz"), 306);
  EXPECT_DOUBLE_EQ(Field(g, "temperature_c"), 47.531);
  EXPECT_DOUBLE_EQ(Field(g, "power_w"), 6.0);    // 5 V x 1.2 A on VDD_GPU_SOC
  EXPECT_DOUBLE_EQ(Field(g, "energy_j"), 12.0);  // 6 W over the 2 s between readings
  EXPECT_FALSE(g.processes_known);
}

TEST(JetsonBackend, AXavierWithoutAPowerMonitorSaysSoOnce) {
  BackendSettings s;
  s.backend = "jetson";
  s.sysfs_root = std::string(SEEDANCE_TEST_DATA) + "/jetson/xavier-nx";
  auto backend = OpenBackend(s);
  ASSERT_TRUE(backend.has_value()) << backend.error().ToString();
  std::vector<std::string> notices;
  for (auto& n : (*backend)->TakeNotices()) notices.push_back(n.text);
  ASSERT_EQ(notices.size(), 1u);
  EXPECT_NE(notices[0].find("power_w not available"), std::string::npos);
  std::vector<GpuSample> samples;
  (*backend)->Sample(1, &samples);
  EXPECT_EQ(samples[0].uuid, "jetson-17000000.gv11b");
  EXPECT_DOUBLE_EQ(Field(samples[0], "gpu_util_pct"), 100);
  EXPECT_EQ(Field(samples[0], "sm_clock_mhz"), 1109);
  EXPECT_DOUBLE_EQ(Field(samples[0], "temperature_c"), 40.5);
  EXPECT_EQ(samples[0].Find("power_w"), nullptr);
}

TEST(JetsonBackend, NoJetsonAndNoNvmlSaysWhyForBoth) {
  BackendSettings s;
  s.nvml_library = "/nonexistent/libnvidia-ml.so.1";
  s.sysfs_root = ::testing::TempDir();
  auto backend = OpenBackend(s);
  ASSERT_FALSE(backend.has_value());
  EXPECT_EQ(backend.error().code(), StatusCode::kNotFound);
  const std::string& m = backend.error().message();
  EXPECT_NE(m.find("nvml: cannot load"), std::string::npos) << m;
  EXPECT_NE(m.find("; jetson: no Jetson GPU"), std::string::npos) << m;
}

TEST(SampleJson, WritesIntegersWholeAndEscapesNames) {
  GpuSample s;
  s.index = 1;
  s.uuid = "GPU-1";
  s.name = "A \"quoted\" GPU";
  s.backend = "nvml";
  s.time_ns = 5;
  s.Add("memory_used_bytes", 141000000000.0, true);
  s.Add("power_w", 312.5);
  s.processes_known = true;
  s.processes.push_back({7, "py\nthon", 1024});
  s.xids = {79};
  EXPECT_EQ(SampleJson(s, true),
            "{\"time_ns\":5,\"device\":1,\"uuid\":\"GPU-1\",\"name\":\"A \\\"quoted\\\" GPU\","
            "\"backend\":\"nvml\",\"state\":\"ok\",\"memory_used_bytes\":141000000000,"
            "\"power_w\":312.5,\"processes\":[{\"pid\":7,\"name\":\"py\\nthon\","
            "\"used_memory_bytes\":1024}],\"xids\":[79]}");
}

// A backend whose readings take longer than the interval now and then.
class SlowBackend final : public GpuBackend {
 public:
  explicit SlowBackend(std::chrono::milliseconds slow_every_third) : slow_(slow_every_third) {}
  std::string_view name() const override { return "slow"; }
  Status Open() override { return Status::Ok(); }
  void Sample(int64_t now_ns, std::vector<GpuSample>* out) override {
    out->emplace_back().time_ns = now_ns;
    if (++n_ % 3 == 0) std::this_thread::sleep_for(slow_);
  }

 private:
  std::chrono::milliseconds slow_;
  int n_ = 0;
};

TEST(Sampler, OverrunPeriodsAreCountedNotBunched) {
  struct Reading {
    int64_t steady_us;       // when its callback ran, since before Start()
    uint64_t missed_before;  // periods skipped before it
  };
  std::mutex mu;
  std::vector<Reading> readings;
  Sampler* self = nullptr;
  const auto t0 = std::chrono::steady_clock::now();
  Sampler sampler([] { return Result<std::unique_ptr<GpuBackend>>(NotFoundError("unused")); },
                  std::chrono::milliseconds(20), std::chrono::seconds(1), [] { return int64_t{0}; },
                  {.on_samples =
                       [&](std::vector<GpuSample>&&) {
                         std::lock_guard<std::mutex> lock(mu);
                         readings.push_back({std::chrono::duration_cast<std::chrono::microseconds>(
                                                 std::chrono::steady_clock::now() - t0)
                                                 .count(),
                                             self->missed()});
                       },
                   .on_open = [](const Status&, std::string_view) {},
                   .on_notice = [](GpuBackend::Notice&&) {}});
  self = &sampler;
  sampler.Start(std::make_unique<SlowBackend>(std::chrono::milliseconds(50)));
  std::this_thread::sleep_for(std::chrono::milliseconds(600));
  sampler.Stop();
  std::lock_guard<std::mutex> lock(mu);
  ASSERT_GE(readings.size(), 6u);
  // Every third reading outlasts its period by at least 30 ms: two or more periods are skipped
  // each time (a sampler that caught up with a burst of readings would skip none).
  EXPECT_GE(sampler.missed(), 2u * (readings.size() / 3));
  // And no more than were skipped: reading i (0-based) runs in period i + missed_before, which
  // must have begun by the time it runs.
  for (size_t i = 0; i < readings.size(); ++i) {
    const uint64_t period = i + readings[i].missed_before;
    EXPECT_LE(period * 20'000, static_cast<uint64_t>(readings[i].steady_us) + 1'000)
        << "reading " << i << " ran ahead of its period";
  }
}

// A backend whose second reading blocks (a wedged driver call) until `release` is set.
class WedgedBackend final : public GpuBackend {
 public:
  explicit WedgedBackend(std::shared_ptr<std::atomic<bool>> release) : release_(release) {}
  std::string_view name() const override { return "wedged"; }
  Status Open() override { return Status::Ok(); }
  void Sample(int64_t, std::vector<GpuSample>* out) override {
    out->emplace_back();
    if (++n_ == 2) {
      while (!*release_) std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
  }

 private:
  std::shared_ptr<std::atomic<bool>> release_;
  int n_ = 0;
};

TEST(Sampler, AWedgedReadingIsVisibleAndCannotHangStop) {
  auto release = std::make_shared<std::atomic<bool>>(false);
  auto calls_after_stop = std::make_shared<std::atomic<int>>(0);
  auto stopped = std::make_shared<std::atomic<bool>>(false);
  auto rounds = std::make_shared<std::atomic<int>>(0);
  {
    Sampler sampler([] { return Result<std::unique_ptr<GpuBackend>>(NotFoundError("unused")); },
                    std::chrono::milliseconds(10), std::chrono::seconds(1),
                    [] { return int64_t{0}; },
                    {.on_samples =
                         [=](std::vector<GpuSample>&&) {
                           ++*rounds;
                           if (*stopped) ++*calls_after_stop;
                         },
                     .on_open = [](const Status&, std::string_view) {},
                     .on_notice = [](GpuBackend::Notice&&) {}});
    sampler.Start(std::make_unique<WedgedBackend>(release));
    for (int i = 0; i < 200 && *rounds < 1; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    EXPECT_EQ(rounds->load(), 1) << "the second reading is stuck";
    EXPECT_GE(sampler.SinceLastRound(), std::chrono::milliseconds(250));
    const auto t0 = std::chrono::steady_clock::now();
    EXPECT_FALSE(sampler.Stop(std::chrono::milliseconds(100)));
    EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(2));
    *stopped = true;
  }  // the Sampler is gone; its thread is still in the driver
  *release = true;
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  EXPECT_EQ(calls_after_stop->load(), 0) << "no callback after Stop() returned";
}

TEST(Sampler, ABackendThatCannotOpenIsTriedAgain) {
  std::atomic<int> tries{0};
  std::atomic<int> rounds{0};
  std::vector<std::string> opens;
  std::mutex mu;
  Sampler sampler(
      [&]() -> Result<std::unique_ptr<GpuBackend>> {
        if (++tries < 3) return NotFoundError("no driver yet");
        return std::unique_ptr<GpuBackend>(new SlowBackend(std::chrono::milliseconds(0)));
      },
      std::chrono::milliseconds(10), std::chrono::milliseconds(20), [] { return int64_t{0}; },
      {.on_samples = [&](std::vector<GpuSample>&&) { ++rounds; },
       .on_open =
           [&](const Status& st, std::string_view b) {
             std::lock_guard<std::mutex> lock(mu);
             opens.push_back(st.ok() ? "open " + std::string(b) : st.message());
           },
       .on_notice = [](GpuBackend::Notice&&) {}});
  sampler.Start();
  for (int i = 0; i < 200 && rounds < 3; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  sampler.Stop();
  EXPECT_GE(rounds.load(), 3);
  std::lock_guard<std::mutex> lock(mu);
  // The failure once (not per try), then the success.
  EXPECT_EQ(opens, (std::vector<std::string>{"no driver yet", "open slow"}));
}

}  // namespace
}  // namespace seedance::sources::gpu
