// What the CUDA tiers share: error conversion, the device/capture-mode guard, the driver's
// virtual memory entry points and the copy engine. Internal to src/trim/cuda.
#pragma once

#include <cuda.h>
#include <cudaTypedefs.h>
#include <cuda_runtime.h>

#include <functional>
#include <mutex>
#include <string>

#include "seedance/status.h"

namespace seedance::trim::cuda {

Status RuntimeError(cudaError_t e, const std::string& what);
// kResourceExhausted for CUDA_ERROR_OUT_OF_MEMORY (a trim can cure it), kInternal otherwise.
Status DriverError(CUresult r, const std::string& what);

// For the lifetime of the guard, the calling thread has `device` current (and so its primary
// context, which the cuMem* calls use) and is in relaxed stream-capture mode, so the tier's
// calls do not invalidate a graph capture running on another thread. Restores both.
class OnDevice {
 public:
  explicit OnDevice(int device);
  ~OnDevice();
  OnDevice(const OnDevice&) = delete;
  OnDevice& operator=(const OnDevice&) = delete;
  // cudaSuccess, or why the device could not be selected.
  cudaError_t status() const { return status_; }

 private:
  int previous_ = -1;
  cudaStreamCaptureMode mode_ = cudaStreamCaptureModeRelaxed;
  cudaError_t status_ = cudaSuccess;
};

// Driver entry points (reached through the runtime, so binaries start without a driver).
struct Driver {
  PFN_cuMemCreate_v10020 create = nullptr;
  PFN_cuMemRelease_v10020 release = nullptr;
  PFN_cuMemAddressReserve_v10020 reserve = nullptr;
  PFN_cuMemAddressFree_v10020 address_free = nullptr;
  PFN_cuMemMap_v10020 map = nullptr;
  PFN_cuMemUnmap_v10020 unmap = nullptr;
  PFN_cuMemSetAccess_v10020 set_access = nullptr;
  PFN_cuMemGetAllocationGranularity_v10020 granularity = nullptr;
  PFN_cuDeviceGet_v2000 device_get = nullptr;
  PFN_cuDeviceGetAttribute_v2000 device_attribute = nullptr;

  Status Load();
  // kFailedPrecondition when `device` lacks virtual memory management (or, with
  // `posix_fd_handles`, POSIX file descriptor handles).
  Status CheckDevice(int device, bool posix_fd_handles) const;
};

// kUnavailable with what to do when the driver is missing or older than the toolkit these
// binaries were built with; OK otherwise.
Status CheckDriverVersion();

// Copies between device and pinned host memory on the tiers' own non-blocking streams: one per
// direction (down: device → host; up: host → device) and urgency (waited, background), so a
// stall never queues behind a background copy and the two directions overlap. Each lane waits
// on its own blocking-sync event (the waiting thread sleeps instead of spinning a core).
// Thread-safe: a lane is used by one copy at a time.
class CopyEngine {
 public:
  enum Lane { kDownWaited, kDownBackground, kUpWaited, kUpBackground, kLanes };
  // `capture_safe`: see CudaTierOptions::capture_safe and WaitForIssuedWork().
  CopyEngine(int device, bool capture_safe) : device_(device), capture_safe_(capture_safe) {}
  ~CopyEngine();
  Status Init();
  int device() const { return device_; }
  // Copies and waits. A copy out of device memory (`from_device`) first waits for the work
  // issued before (the release contract: the work that used the buffer may still run).
  Status Copy(void* dst, const void* src, uint64_t size, Lane lane, bool from_device);
  // Runs `work` with `lane`'s stream (it issues its work there; the lane is its own until the
  // call returns), then waits for the lane. `from_device` as in Copy. For the zero-block
  // codec's moves, which run kernels and several copies per move.
  Status Run(Lane lane, bool from_device, const std::function<Status(cudaStream_t)>& work);
  // Waits for the work issued on the device so far (before memory is copied out, unmapped or
  // reused): every stream (cudaDeviceSynchronize), or with `capture_safe` the legacy default
  // stream and so every blocking stream (an event recorded there), which leaves a graph capture
  // on another thread intact. kFailedPrecondition, saying so, when a capture refused the wait.
  Status WaitForIssuedWork();

 private:
  struct LaneState {
    cudaStream_t stream = nullptr;
    cudaEvent_t done = nullptr;
    std::mutex mu;
  };
  int device_;
  bool capture_safe_;
  LaneState lanes_[kLanes];
  std::mutex legacy_mu_;
  cudaEvent_t legacy_done_ = nullptr;  // capture_safe: recorded on the legacy stream
};

}  // namespace seedance::trim::cuda
