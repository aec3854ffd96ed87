// GpuBackend: where GPU readings come from (NVML on discrete and data-centre GPUs, sysfs on
// Jetson modules), behind one interface the gpu source and `seedance gpu sample` share.
//
// Thread-compatible: Open() and Sample() are called from the one sampling thread (they may
// block: NVML's PCIe counters take 20 ms each), never from the event loop.
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "seedance/result.h"
#include "seedance/status.h"
#include "sources/gpu/gpu_sample.h"

namespace seedance::sources::gpu {

struct BackendSettings {
  std::string backend = "auto";                    // auto, nvml or jetson
  std::string nvml_library = "libnvidia-ml.so.1";  // dlopen()ed by name or path
  std::string sysfs_root = "/";                    // Jetson: where sys/ and proc/ are
  std::vector<std::string> devices;                // indices or UUIDs; empty: every device
  bool processes = true;                           // list processes and their memory
  bool gpm = true;                                 // GPM metrics where the device has them
};

class GpuBackend {
 public:
  virtual ~GpuBackend() = default;
  virtual std::string_view name() const = 0;
  // Finds the devices. kNotFound: no driver, library or device of this kind;
  // kFailedPrecondition: there is one but it cannot be used (nvmlInit failed, with why);
  // kInvalidArgument: a configured device does not exist.
  virtual Status Open() = 0;
  // Appends one sample per device, taken now (`now_ns`, Unix ns). A device that fails is
  // reported in its sample (state "lost"), never by failing the call.
  virtual void Sample(int64_t now_ns, std::vector<GpuSample>* out) = 0;
  // Lines worth one log line each since the last call: a field a device does not offer
  // (once per device and field), a device lost or back (`warning`), an Xid (`warning`).
  struct Notice {
    bool warning = false;
    std::string text;
  };
  std::vector<Notice> TakeNotices() { return std::exchange(notices_, {}); }

 protected:
  void Note(std::string text) { notices_.push_back(Notice{false, std::move(text)}); }
  void Warn(std::string text) { notices_.push_back(Notice{true, std::move(text)}); }

 private:
  std::vector<Notice> notices_;
};

std::unique_ptr<GpuBackend> MakeNvmlBackend(const BackendSettings& settings);
std::unique_ptr<GpuBackend> MakeJetsonBackend(const BackendSettings& settings);

// The backend `settings.backend` names, opened; for "auto" NVML, then Jetson. On failure the
// status says why each candidate could not be used.
Result<std::unique_ptr<GpuBackend>> OpenBackend(const BackendSettings& settings);

}  // namespace seedance::sources::gpu
