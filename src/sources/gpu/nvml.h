// Nvml: the few NVML functions the gpu source uses, loaded at run time.
//
// The static binary must start on a machine without an NVIDIA driver, so it does not link
// libnvidia-ml: Load() dlopen()s it ("libnvidia-ml.so.1" by default, the name the driver
// installs) and looks each function up. The declarations below are our own, written from
// NVIDIA's nvml.h (its structures' layouts and enum values are part of the driver's stable ABI);
// we carry no copy of that header. A function the library lacks is left null and its field
// reported as not supported (older drivers have no GPM, no memory v2).
//
// Thread-compatible: Load() once, then the calls may be made from one sampling thread.
#pragma once

#include <cstdint>
#include <string>

#include "seedance/status.h"

namespace seedance::sources::gpu {

using nvmlReturn_t = int;
using nvmlDevice_t = struct nvmlDevice_st*;
using nvmlGpmSample_t = struct nvmlGpmSample_st*;
using nvmlEventSet_t = struct nvmlEventSet_st*;

inline constexpr nvmlReturn_t kNvmlSuccess = 0;
inline constexpr nvmlReturn_t kNvmlErrorNotSupported = 3;
inline constexpr nvmlReturn_t kNvmlErrorNoPermission = 4;
inline constexpr nvmlReturn_t kNvmlErrorNotFound = 6;
inline constexpr nvmlReturn_t kNvmlErrorInsufficientSize = 7;
inline constexpr nvmlReturn_t kNvmlErrorDriverNotLoaded = 9;
inline constexpr nvmlReturn_t kNvmlErrorTimeout = 10;
inline constexpr nvmlReturn_t kNvmlErrorGpuIsLost = 15;
inline constexpr nvmlReturn_t kNvmlErrorResetRequired = 16;

struct NvmlMemoryV1 {  // nvmlMemory_t
  unsigned long long total, free, used;
};
struct NvmlMemoryV2 {  // nvmlMemory_v2_t; `used` includes `reserved`
  unsigned int version;
  unsigned long long total, reserved, free, used;
};
// NVML_STRUCT_VERSION(Memory, 2): the structure's size, and the version in the top byte.
inline constexpr unsigned int kNvmlMemoryV2Version = sizeof(NvmlMemoryV2) | (2u << 24);

struct NvmlUtilization {  // nvmlUtilization_t, percent over the driver's last sample period
  unsigned int gpu, memory;
};
struct NvmlProcessInfo {  // nvmlProcessInfo_t (the _v2/_v3 functions' layout)
  unsigned int pid;
  unsigned long long used_gpu_memory;  // NVML_VALUE_NOT_AVAILABLE (~0ULL) when hidden
  unsigned int gpu_instance_id, compute_instance_id;
};
inline constexpr unsigned long long kNvmlValueNotAvailable = ~0ULL;

struct NvmlEventData {  // nvmlEventData_t
  nvmlDevice_t device;
  unsigned long long event_type;
  unsigned long long event_data;  // the Xid
  unsigned int gpu_instance_id, compute_instance_id;
};
inline constexpr unsigned long long kNvmlEventTypeXidCriticalError = 0x8;

// GPM (Hopper and later): two samples a period apart give per-period metrics.
struct NvmlGpmSupport {
  unsigned int version;  // 1
  unsigned int is_supported_device;
};
struct NvmlGpmMetric {
  unsigned int metric_id;
  nvmlReturn_t nvml_return;
  double value;
  struct {
    char* short_name;
    char* long_name;
    char* unit;
  } metric_info;
};
// NVML_GPM_METRIC_MAX grew with driver versions (98, 210, 333): the library fills only
// numMetrics entries; the array is sized for the largest seen.
struct NvmlGpmMetricsGet {
  unsigned int version;  // 1
  unsigned int num_metrics;
  nvmlGpmSample_t sample1, sample2;
  NvmlGpmMetric metrics[333];
};
enum NvmlGpmMetricId : unsigned int {
  kGpmSmUtil = 2,         // percent of SMs busy
  kGpmSmOccupancy = 3,    // percent of warps active vs the theoretical maximum
  kGpmDramBwUtil = 10,    // percent of peak DRAM bandwidth
  kGpmPcieTxPerSec = 20,  // bytes/s
  kGpmPcieRxPerSec = 21,  // bytes/s
};

inline constexpr unsigned int kNvmlTemperatureGpu = 0;
inline constexpr unsigned int kNvmlClockSm = 1;
inline constexpr unsigned int kNvmlClockMem = 2;
inline constexpr unsigned int kNvmlPcieTxBytes = 0;  // KB/s over the last 20 ms
inline constexpr unsigned int kNvmlPcieRxBytes = 1;

class Nvml {
 public:
  Nvml() = default;
  ~Nvml();
  Nvml(const Nvml&) = delete;
  Nvml& operator=(const Nvml&) = delete;

  // dlopen()s `library` and initialises NVML. kNotFound: the library is not there (no
  // driver); kFailedPrecondition: it is there but nvmlInit failed (driver not loaded, no
  // permission), with NVML's reason.
  Status Load(const std::string& library);
  bool loaded() const { return init_done_; }
  // NVML's text for a return code ("GPU is lost"), or the number when it has none.
  std::string ErrorString(nvmlReturn_t r) const;

  // The functions, null when the library lacks them. Required ones are never null after a
  // successful Load().
  nvmlReturn_t (*Init)() = nullptr;
  nvmlReturn_t (*Shutdown)() = nullptr;
  const char* (*ErrorStringFn)(nvmlReturn_t) = nullptr;
  nvmlReturn_t (*DeviceGetCount)(unsigned int*) = nullptr;
  nvmlReturn_t (*DeviceGetHandleByIndex)(unsigned int, nvmlDevice_t*) = nullptr;
  nvmlReturn_t (*DeviceGetName)(nvmlDevice_t, char*, unsigned int) = nullptr;
  nvmlReturn_t (*DeviceGetUUID)(nvmlDevice_t, char*, unsigned int) = nullptr;
  nvmlReturn_t (*DeviceGetMemoryInfo)(nvmlDevice_t, NvmlMemoryV1*) = nullptr;
  nvmlReturn_t (*DeviceGetMemoryInfoV2)(nvmlDevice_t, NvmlMemoryV2*) = nullptr;
  nvmlReturn_t (*DeviceGetUtilizationRates)(nvmlDevice_t, NvmlUtilization*) = nullptr;
  nvmlReturn_t (*DeviceGetPowerUsage)(nvmlDevice_t, unsigned int*) = nullptr;  // mW
  nvmlReturn_t (*DeviceGetTotalEnergyConsumption)(nvmlDevice_t, unsigned long long*) =
      nullptr;  // mJ since the driver loaded
  nvmlReturn_t (*DeviceGetTemperature)(nvmlDevice_t, unsigned int, unsigned int*) = nullptr;
  nvmlReturn_t (*DeviceGetClockInfo)(nvmlDevice_t, unsigned int, unsigned int*) = nullptr;
  nvmlReturn_t (*DeviceGetPcieThroughput)(nvmlDevice_t, unsigned int, unsigned int*) = nullptr;
  nvmlReturn_t (*DeviceGetComputeRunningProcesses)(nvmlDevice_t, unsigned int*,
                                                   NvmlProcessInfo*) = nullptr;
  nvmlReturn_t (*DeviceGetGraphicsRunningProcesses)(nvmlDevice_t, unsigned int*,
                                                    NvmlProcessInfo*) = nullptr;
  nvmlReturn_t (*GpmQueryDeviceSupport)(nvmlDevice_t, NvmlGpmSupport*) = nullptr;
  nvmlReturn_t (*GpmSampleAlloc)(nvmlGpmSample_t*) = nullptr;
  nvmlReturn_t (*GpmSampleFree)(nvmlGpmSample_t) = nullptr;
  nvmlReturn_t (*GpmSampleGet)(nvmlDevice_t, nvmlGpmSample_t) = nullptr;
  nvmlReturn_t (*GpmMetricsGet)(NvmlGpmMetricsGet*) = nullptr;
  nvmlReturn_t (*EventSetCreate)(nvmlEventSet_t*) = nullptr;
  nvmlReturn_t (*EventSetFree)(nvmlEventSet_t) = nullptr;
  nvmlReturn_t (*DeviceRegisterEvents)(nvmlDevice_t, unsigned long long, nvmlEventSet_t) = nullptr;
  nvmlReturn_t (*EventSetWait)(nvmlEventSet_t, NvmlEventData*, unsigned int) = nullptr;

 private:
  void* handle_ = nullptr;
  bool init_done_ = false;
};

}  // namespace seedance::sources::gpu
