#include "sources/gpu/nvml.h"

#include <dlfcn.h>

#include <string_view>

namespace seedance::sources::gpu {
namespace {

template <typename Fn>
void Resolve(void* handle, const char* name, Fn* fn) {
  *fn = reinterpret_cast<Fn>(dlsym(handle, name));
}

// The first of `names` the library has (newer versions first).
template <typename Fn>
void ResolveFirst(void* handle, std::initializer_list<const char*> names, Fn* fn) {
  for (const char* name : names) {
    Resolve(handle, name, fn);
    if (*fn != nullptr) return;
  }
}

}  // namespace

Nvml::~Nvml() {
  if (init_done_ && Shutdown != nullptr) Shutdown();
  if (handle_ != nullptr) dlclose(handle_);
}

Status Nvml::Load(const std::string& library) {
  handle_ = dlopen(library.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle_ == nullptr) {
    const char* why = dlerror();
    return NotFoundError("cannot load " + library +
                         " (no NVIDIA driver?): " + (why != nullptr ? why : "unknown"));
  }
  ResolveFirst(handle_, {"nvmlInit_v2", "nvmlInit"}, &Init);
  Resolve(handle_, "nvmlShutdown", &Shutdown);
  Resolve(handle_, "nvmlErrorString", &ErrorStringFn);
  ResolveFirst(handle_, {"nvmlDeviceGetCount_v2", "nvmlDeviceGetCount"}, &DeviceGetCount);
  ResolveFirst(handle_, {"nvmlDeviceGetHandleByIndex_v2", "nvmlDeviceGetHandleByIndex"},
               &DeviceGetHandleByIndex);
  if (Init == nullptr || Shutdown == nullptr || DeviceGetCount == nullptr ||
      DeviceGetHandleByIndex == nullptr) {
    return FailedPreconditionError(
        library +
        " is not NVML: nvmlInit_v2, nvmlShutdown, "
        "nvmlDeviceGetCount_v2 or nvmlDeviceGetHandleByIndex_v2 missing");
  }
  Resolve(handle_, "nvmlDeviceGetName", &DeviceGetName);
  Resolve(handle_, "nvmlDeviceGetUUID", &DeviceGetUUID);
  Resolve(handle_, "nvmlDeviceGetMemoryInfo", &DeviceGetMemoryInfo);
  Resolve(handle_, "nvmlDeviceGetMemoryInfo_v2", &DeviceGetMemoryInfoV2);
  Resolve(handle_, "nvmlDeviceGetUtilizationRates", &DeviceGetUtilizationRates);
  Resolve(handle_, "nvmlDeviceGetPowerUsage", &DeviceGetPowerUsage);
  Resolve(handle_, "nvmlDeviceGetTotalEnergyConsumption", &DeviceGetTotalEnergyConsumption);
  Resolve(handle_, "nvmlDeviceGetTemperature", &DeviceGetTemperature);
  Resolve(handle_, "nvmlDeviceGetClockInfo", &DeviceGetClockInfo);
  Resolve(handle_, "nvmlDeviceGetPcieThroughput", &DeviceGetPcieThroughput);
  // _v3 and _v2 take the same 24-byte nvmlProcessInfo_t; the unversioned name takes a 16-byte
  // one and is not used.
  ResolveFirst(
      handle_,
      {"nvmlDeviceGetComputeRunningProcesses_v3", "nvmlDeviceGetComputeRunningProcesses_v2"},
      &DeviceGetComputeRunningProcesses);
  ResolveFirst(
      handle_,
      {"nvmlDeviceGetGraphicsRunningProcesses_v3", "nvmlDeviceGetGraphicsRunningProcesses_v2"},
      &DeviceGetGraphicsRunningProcesses);
  Resolve(handle_, "nvmlGpmQueryDeviceSupport", &GpmQueryDeviceSupport);
  Resolve(handle_, "nvmlGpmSampleAlloc", &GpmSampleAlloc);
  Resolve(handle_, "nvmlGpmSampleFree", &GpmSampleFree);
  Resolve(handle_, "nvmlGpmSampleGet", &GpmSampleGet);
  Resolve(handle_, "nvmlGpmMetricsGet", &GpmMetricsGet);
  Resolve(handle_, "nvmlEventSetCreate", &EventSetCreate);
  Resolve(handle_, "nvmlEventSetFree", &EventSetFree);
  Resolve(handle_, "nvmlDeviceRegisterEvents", &DeviceRegisterEvents);
  ResolveFirst(handle_, {"nvmlEventSetWait_v2", "nvmlEventSetWait"}, &EventSetWait);

  nvmlReturn_t r = Init();
  if (r != kNvmlSuccess) {
    return FailedPreconditionError("nvmlInit failed: " + ErrorString(r));
  }
  init_done_ = true;
  return Status::Ok();
}

std::string Nvml::ErrorString(nvmlReturn_t r) const {
  const char* text = ErrorStringFn != nullptr ? ErrorStringFn(r) : nullptr;
  std::string out = text != nullptr ? std::string(text) : std::string("NVML error");
  out += " (" + std::to_string(r) + ")";
  return out;
}

}  // namespace seedance::sources::gpu
