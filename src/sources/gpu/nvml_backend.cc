// The NVML backend: one reading per device per call, from the driver's management library.
#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <memory>
#include <set>
#include <unordered_map>
#include <utility>

#include "sources/gpu/gpu_backend.h"
#include "sources/gpu/nvml.h"
#include "util/fd_io.h"

namespace seedance::sources::gpu {
namespace {

// The most processes listed per device: the list is the driver's, and a sample's size should
// not follow it without limit (a machine rarely has more than a few dozen).
constexpr unsigned int kMaxProcesses = 1024;
constexpr nvmlReturn_t kNvmlErrorInvalidArgument = 2;
constexpr nvmlReturn_t kNvmlErrorFunctionNotFound = 13;
constexpr nvmlReturn_t kNvmlErrorArgumentVersionMismatch = 25;

// /proc/PID/comm, or "" when it cannot be read (another PID namespace: NVML reports the
// host's pids).
std::string ProcessName(unsigned int pid) {
  Result<std::string> comm =
      util::ReadRegularFile("/proc/" + std::to_string(pid) + "/comm", 256, "process name");
  if (!comm.has_value()) return "";
  std::string name = std::move(comm).value();
  while (!name.empty() && (name.back() == '\n' || name.back() == '\0')) name.pop_back();
  return name;
}

class NvmlBackend final : public GpuBackend {
 public:
  explicit NvmlBackend(BackendSettings settings) : settings_(std::move(settings)) {}
  ~NvmlBackend() override {
    for (Device& d : devices_) {
      for (nvmlGpmSample_t s : d.gpm) {
        if (s != nullptr && nvml_.GpmSampleFree != nullptr) nvml_.GpmSampleFree(s);
      }
    }
    if (events_ != nullptr && nvml_.EventSetFree != nullptr) nvml_.EventSetFree(events_);
  }

  std::string_view name() const override { return "nvml"; }

  Status Open() override {
    SEEDANCE_RETURN_IF_ERROR(nvml_.Load(settings_.nvml_library));
    unsigned int count = 0;
    nvmlReturn_t r = nvml_.DeviceGetCount(&count);
    if (r != kNvmlSuccess) {
      return FailedPreconditionError("nvmlDeviceGetCount: " + nvml_.ErrorString(r));
    }
    if (count == 0) return NotFoundError("NVML found no GPU");
    constexpr unsigned int kMaxDevices = 64;  // a count past any machine's is not followed
    if (count > kMaxDevices) {
      Note(fmt::format("NVML counts {} GPUs: reading the first {}", count, kMaxDevices));
      count = kMaxDevices;
    }
    if (nvml_.EventSetCreate != nullptr && nvml_.EventSetCreate(&events_) != kNvmlSuccess) {
      events_ = nullptr;
    }
    std::set<std::string> wanted(settings_.devices.begin(), settings_.devices.end());
    int no_handle = 0;
    std::string first_no_handle;
    for (unsigned int i = 0; i < count; ++i) {
      Device d;
      d.index = static_cast<int>(i);
      r = nvml_.DeviceGetHandleByIndex(i, &d.handle);
      if (r != kNvmlSuccess) {
        if (no_handle++ == 0) first_no_handle = fmt::format("{}: {}", i, nvml_.ErrorString(r));
        continue;
      }
      char text[96] = {};
      if (nvml_.DeviceGetUUID != nullptr &&
          nvml_.DeviceGetUUID(d.handle, text, sizeof text) == kNvmlSuccess) {
        d.uuid = std::string(text, strnlen(text, sizeof text));
      }
      std::fill(std::begin(text), std::end(text), '\0');
      if (nvml_.DeviceGetName != nullptr &&
          nvml_.DeviceGetName(d.handle, text, sizeof text) == kNvmlSuccess) {
        d.name = std::string(text, strnlen(text, sizeof text));
      }
      if (!wanted.empty() && wanted.count(std::to_string(i)) == 0 && wanted.count(d.uuid) == 0) {
        continue;
      }
      wanted.erase(std::to_string(i));
      wanted.erase(d.uuid);
      SetUpGpm(d);
      if (events_ != nullptr && nvml_.DeviceRegisterEvents != nullptr) {
        nvml_.DeviceRegisterEvents(d.handle, kNvmlEventTypeXidCriticalError, events_);
      }
      devices_.push_back(std::move(d));
    }
    if (no_handle > 0) {
      Note(fmt::format("{} of {} GPUs could not be opened (device {})", no_handle, count,
                       first_no_handle));
    }
    if (!wanted.empty()) {
      return InvalidArgumentError(
          fmt::format("devices: no GPU \"{}\" (NVML found {})", *wanted.begin(), count));
    }
    if (devices_.empty())
      return NotFoundError("NVML opened none of its " + std::to_string(count) + " GPUs (device " +
                           first_no_handle + ")");
    return Status::Ok();
  }

  void Sample(int64_t now_ns, std::vector<GpuSample>* out) override {
    ++round_;
    std::vector<std::pair<nvmlDevice_t, uint64_t>> xids = DrainXids();
    for (Device& d : devices_) {
      GpuSample& s = out->emplace_back();
      s.index = d.index;
      s.uuid = d.uuid;
      s.name = d.name;
      s.backend = "nvml";
      s.time_ns = now_ns;
      for (const auto& [handle, xid] : xids) {
        if (handle == d.handle) s.xids.push_back(xid);
      }
      for (uint64_t xid : s.xids) Warn(fmt::format("device {}: Xid {}", d.index, xid));
      SampleDevice(d, s);
      for (const auto& [why, fields] : d.newly_unsupported) {  // one line per device and reason
        Note(fmt::format("device {}: not available ({}): {}", d.index, why, fields));
      }
      d.newly_unsupported.clear();
      if (s.state == "lost" && !d.lost) {
        d.lost = true;
        Warn(fmt::format("device {} ({}) lost: {}", d.index, d.uuid, s.error));
      } else if (s.state != "lost" && d.lost) {
        d.lost = false;
        d.gpm_primed = false;
        Warn(fmt::format("device {} ({}) answers again", d.index, d.uuid));
      }
    }
    std::erase_if(names_, [&](const auto& e) { return e.second.round != round_; });
  }

 private:
  struct Device {
    int index = 0;
    nvmlDevice_t handle = nullptr;
    std::string uuid, name;
    nvmlGpmSample_t gpm[2] = {nullptr, nullptr};
    int gpm_current = 0;
    bool gpm_primed = false;  // gpm[1 - current] holds the previous reading
    bool lost = false;
    bool memory_v1 = false;                                // memory v2 refused: use v1
    std::set<std::string_view> unsupported;                // fields reported as not offered
    std::map<std::string, std::string> newly_unsupported;  // this round's, by NVML's reason
  };

  void SetUpGpm(Device& d) {
    if (!settings_.gpm || nvml_.GpmQueryDeviceSupport == nullptr ||
        nvml_.GpmSampleAlloc == nullptr || nvml_.GpmSampleGet == nullptr ||
        nvml_.GpmMetricsGet == nullptr) {
      return;
    }
    NvmlGpmSupport support{1, 0};
    if (nvml_.GpmQueryDeviceSupport(d.handle, &support) != kNvmlSuccess ||
        support.is_supported_device == 0) {
      Note(fmt::format("device {}: no GPM metrics (Hopper and later)", d.index));
      return;
    }
    if (nvml_.GpmSampleAlloc(&d.gpm[0]) != kNvmlSuccess ||
        nvml_.GpmSampleAlloc(&d.gpm[1]) != kNvmlSuccess) {
      Note(fmt::format("device {}: GPM sample buffers could not be allocated", d.index));
      if (d.gpm[0] != nullptr) nvml_.GpmSampleFree(d.gpm[0]);
      d.gpm[0] = d.gpm[1] = nullptr;
    }
  }

  // True when `r` is success; otherwise records why the field is missing: the device is lost
  // (the sample says so), or the field is not offered (noticed once per device and field).
  bool Check(Device& d, GpuSample& s, std::string_view field, nvmlReturn_t r) {
    if (r == kNvmlSuccess) return true;
    if (r == kNvmlErrorGpuIsLost || r == kNvmlErrorResetRequired) {
      s.state = "lost";
      if (s.error.empty()) s.error = nvml_.ErrorString(r);
    } else if (d.unsupported.insert(field).second) {
      std::string& fields = d.newly_unsupported[nvml_.ErrorString(r)];
      fields += fields.empty() ? "" : ", ";
      fields += field;
    }
    return false;
  }

  void SampleDevice(Device& d, GpuSample& s) {
    ReadMemory(d, s);
    if (s.state == "lost") return;  // every other call would fail the same way
    if (nvml_.DeviceGetUtilizationRates != nullptr) {
      NvmlUtilization u{};
      if (Check(d, s, "gpu_util_pct", nvml_.DeviceGetUtilizationRates(d.handle, &u))) {
        s.Add("gpu_util_pct", u.gpu, true);
        s.Add("memory_util_pct", u.memory, true);
      }
    }
    unsigned int v = 0;
    if (nvml_.DeviceGetPowerUsage != nullptr &&
        Check(d, s, "power_w", nvml_.DeviceGetPowerUsage(d.handle, &v))) {
      s.Add("power_w", v / 1000.0);
    }
    unsigned long long mj = 0;
    if (nvml_.DeviceGetTotalEnergyConsumption != nullptr &&
        Check(d, s, "energy_j", nvml_.DeviceGetTotalEnergyConsumption(d.handle, &mj))) {
      s.Add("energy_j", mj / 1000.0);
    }
    if (nvml_.DeviceGetTemperature != nullptr &&
        Check(d, s, "temperature_c",
              nvml_.DeviceGetTemperature(d.handle, kNvmlTemperatureGpu, &v))) {
      s.Add("temperature_c", v, true);
    }
    if (nvml_.DeviceGetClockInfo != nullptr) {
      if (Check(d, s, "sm_clock_mhz", nvml_.DeviceGetClockInfo(d.handle, kNvmlClockSm, &v))) {
        s.Add("sm_clock_mhz", v, true);
      }
      if (Check(d, s, "memory_clock_mhz", nvml_.DeviceGetClockInfo(d.handle, kNvmlClockMem, &v))) {
        s.Add("memory_clock_mhz", v, true);
      }
    }
    if (nvml_.DeviceGetPcieThroughput != nullptr) {  // KB/s, each call samples for 20 ms
      if (Check(d, s, "pcie_tx_bytes_per_s",
                nvml_.DeviceGetPcieThroughput(d.handle, kNvmlPcieTxBytes, &v))) {
        s.Add("pcie_tx_bytes_per_s", v * 1024.0, true);
      }
      if (Check(d, s, "pcie_rx_bytes_per_s",
                nvml_.DeviceGetPcieThroughput(d.handle, kNvmlPcieRxBytes, &v))) {
        s.Add("pcie_rx_bytes_per_s", v * 1024.0, true);
      }
    }
    ReadGpm(d, s);
    if (settings_.processes) ReadProcesses(d, s);
  }

  void ReadMemory(Device& d, GpuSample& s) {
    unsigned long long total = 0, free = 0, used = 0, reserved = 0;
    bool have = false, have_reserved = false;
    if (!d.memory_v1 && nvml_.DeviceGetMemoryInfoV2 != nullptr) {
      NvmlMemoryV2 m{};
      m.version = kNvmlMemoryV2Version;
      nvmlReturn_t r = nvml_.DeviceGetMemoryInfoV2(d.handle, &m);
      if (r == kNvmlSuccess) {
        total = m.total, free = m.free, used = m.used, reserved = m.reserved;
        have = have_reserved = true;
      } else if (r != kNvmlErrorArgumentVersionMismatch && r != kNvmlErrorNotSupported &&
                 r != kNvmlErrorInvalidArgument && r != kNvmlErrorFunctionNotFound) {
        Check(d, s, "memory_used_bytes", r);  // lost, or a failure of this reading
        return;
      } else {
        d.memory_v1 = true;  // a driver that does not take memory v2: v1 from now on
      }
    }
    if (!have && nvml_.DeviceGetMemoryInfo != nullptr) {
      NvmlMemoryV1 m{};
      if (!Check(d, s, "memory_used_bytes", nvml_.DeviceGetMemoryInfo(d.handle, &m))) return;
      total = m.total, free = m.free, used = m.used;
      have = true;
    }
    if (!have) return;
    s.Add("memory_total_bytes", static_cast<double>(total), true);
    s.Add("memory_used_bytes", static_cast<double>(used), true);
    s.Add("memory_free_bytes", static_cast<double>(free), true);
    if (have_reserved) s.Add("memory_reserved_bytes", static_cast<double>(reserved), true);
    if (total > 0) s.Add("memory_used_pct", 100.0 * static_cast<double>(used) / total);
  }

  void ReadGpm(Device& d, GpuSample& s) {
    if (d.gpm[0] == nullptr) return;
    nvmlGpmSample_t current = d.gpm[d.gpm_current];
    if (!Check(d, s, "gpm", nvml_.GpmSampleGet(d.handle, current))) {
      d.gpm_primed = false;
      return;
    }
    if (d.gpm_primed) {
      static const std::pair<NvmlGpmMetricId, std::string_view> kMetrics[] = {
          {kGpmSmUtil, "gpm_sm_util_pct"},
          {kGpmSmOccupancy, "gpm_sm_occupancy_pct"},
          {kGpmDramBwUtil, "gpm_dram_bw_util_pct"},
          {kGpmPcieTxPerSec, "gpm_pcie_tx_bytes_per_s"},
          {kGpmPcieRxPerSec, "gpm_pcie_rx_bytes_per_s"},
      };
      auto get = std::make_unique<NvmlGpmMetricsGet>();
      get->version = 1;
      get->num_metrics = std::size(kMetrics);
      get->sample1 = d.gpm[1 - d.gpm_current];
      get->sample2 = current;
      for (size_t i = 0; i < std::size(kMetrics); ++i)
        get->metrics[i].metric_id = kMetrics[i].first;
      if (Check(d, s, "gpm", nvml_.GpmMetricsGet(get.get()))) {
        for (size_t i = 0; i < std::size(kMetrics); ++i) {
          if (Check(d, s, kMetrics[i].second, get->metrics[i].nvml_return)) {
            bool bytes = kMetrics[i].first >= kGpmPcieTxPerSec;
            s.Add(kMetrics[i].second, get->metrics[i].value, bytes);
          }
        }
      }
    }
    d.gpm_primed = true;
    d.gpm_current = 1 - d.gpm_current;
  }

  void ReadProcesses(Device& d, GpuSample& s) {
    if (nvml_.DeviceGetComputeRunningProcesses == nullptr) return;
    auto list = [&](auto fn, std::string_view field) {
      if (fn == nullptr || !s.processes_known) return;
      unsigned int n = 0;
      nvmlReturn_t r = kNvmlSuccess;
      for (int attempt = 0; attempt < 2; ++attempt) {
        n = static_cast<unsigned int>(procs_.size());
        r = fn(d.handle, &n, procs_.data());
        if (r != kNvmlErrorInsufficientSize || procs_.size() >= kMaxProcesses) break;
        procs_.resize(std::min(std::max<size_t>(n, procs_.size()) + 16, size_t{kMaxProcesses}));
      }
      if (r == kNvmlErrorInsufficientSize) {  // more than kMaxProcesses, or still growing
        if (d.unsupported.insert("processes_too_many").second) {
          Note(fmt::format("device {}: more than {} processes: the list is left out", d.index,
                           kMaxProcesses));
        }
        s.processes_known = false;
        s.processes.clear();
        return;
      }
      if (!Check(d, s, field, r)) return;
      n = std::min<unsigned int>(n, static_cast<unsigned int>(procs_.size()));
      for (unsigned int i = 0; i < n; ++i) {
        const NvmlProcessInfo& p = procs_[i];
        int64_t used = p.used_gpu_memory == kNvmlValueNotAvailable
                           ? -1
                           : static_cast<int64_t>(p.used_gpu_memory);
        auto it = std::find_if(s.processes.begin(), s.processes.end(),
                               [&](const ProcessSample& q) { return q.pid == p.pid; });
        if (it != s.processes.end()) {  // in both lists: the same memory
          it->used_bytes = std::max(it->used_bytes, used);
        } else if (s.processes.size() < kMaxProcesses) {
          s.processes.push_back(ProcessSample{p.pid, NameOf(p.pid), used});
        }
      }
    };
    if (procs_.empty()) procs_.resize(64);
    s.processes_known = true;
    list(nvml_.DeviceGetComputeRunningProcesses, "processes");
    list(nvml_.DeviceGetGraphicsRunningProcesses, "graphics_processes");
  }

  // A process's name, read from /proc once while the process stays on a GPU.
  const std::string& NameOf(unsigned int pid) {
    auto [it, added] = names_.try_emplace(pid);
    if (added) it->second.name = ProcessName(pid);
    it->second.round = round_;
    return it->second.name;
  }

  std::vector<std::pair<nvmlDevice_t, uint64_t>> DrainXids() {
    std::vector<std::pair<nvmlDevice_t, uint64_t>> out;
    if (events_ == nullptr || nvml_.EventSetWait == nullptr) return out;
    for (int i = 0; i < 64; ++i) {  // bounded: a storm of events waits for the next sample
      NvmlEventData e{};
      if (nvml_.EventSetWait(events_, &e, 0) != kNvmlSuccess) break;
      if (e.event_type == kNvmlEventTypeXidCriticalError) out.emplace_back(e.device, e.event_data);
    }
    return out;
  }

  BackendSettings settings_;
  Nvml nvml_;
  nvmlEventSet_t events_ = nullptr;
  std::vector<Device> devices_;
  std::vector<NvmlProcessInfo> procs_;
  struct KnownName {
    std::string name;
    uint64_t round = 0;  // the last round the process was listed in
  };
  std::unordered_map<unsigned int, KnownName> names_;
  uint64_t round_ = 0;
};

}  // namespace

std::unique_ptr<GpuBackend> MakeNvmlBackend(const BackendSettings& settings) {
  return std::make_unique<NvmlBackend>(settings);
}

}  // namespace seedance::sources::gpu
