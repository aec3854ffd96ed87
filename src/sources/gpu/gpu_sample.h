// GpuSample: what one reading of one GPU holds, and its JSON form (the gpu source's event
// payload and a `seedance gpu sample` line). Fields a device does not offer are absent, not 0.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace seedance::sources::gpu {

struct ProcessSample {
  uint32_t pid = 0;
  std::string name;         // /proc/PID/comm; empty where PID namespaces hide the process
  int64_t used_bytes = -1;  // -1: the driver does not tell (e.g. under MIG without rights)
};

// One named number. Names are the payload keys (docs/gpu-source.md): memory_used_bytes,
// gpu_util_pct, power_w, ...; `integer` numbers are written without a fraction.
struct SampleField {
  std::string_view name;
  double value = 0;
  bool integer = false;
};

struct GpuSample {
  int index = 0;             // the backend's device index
  std::string uuid;          // GPU-... (NVML) or jetson-<devfreq device>
  std::string name;          // "NVIDIA H200", the Jetson module's model
  std::string_view backend;  // "nvml" or "jetson"
  int64_t time_ns = 0;       // when the reading was taken (Unix ns): the event time
  // "ok", or "lost" (the device stopped answering: GPU fallen off the bus, an Xid that needs a
  // reset); `error` says why.
  std::string_view state = "ok";
  std::string error;
  std::vector<SampleField> fields;
  bool processes_known = false;  // false: the backend cannot list processes (Jetson)
  std::vector<ProcessSample> processes;
  std::vector<uint64_t> xids;  // critical Xid errors reported since the last sample

  void Add(std::string_view field, double value, bool integer = false) {
    fields.push_back(SampleField{field, value, integer});
  }
  // nullptr when the sample has no such field.
  const SampleField* Find(std::string_view field) const;
};

// The payload: {"device":0,"uuid":...,"name":...,"backend":...,"state":"ok",<fields>,
// "processes":[{"pid":..,"name":..,"used_memory_bytes":..}],"xids":[..]}; with `time` first
// "time_ns" (the sampler's NDJSON lines).
std::string SampleJson(const GpuSample& sample, bool with_time = false);

}  // namespace seedance::sources::gpu
