// See cuda_support.h.
#include "trim/cuda/cuda_support.h"

namespace seedance::trim::cuda {

Status RuntimeError(cudaError_t e, const std::string& what) {
  return Status(
      e == cudaErrorMemoryAllocation ? StatusCode::kResourceExhausted : StatusCode::kUnavailable,
      "CUDA " + what + ": " + cudaGetErrorString(e) + " (" + std::to_string(static_cast<int>(e)) +
          ")");
}

Status DriverError(CUresult r, const std::string& what) {
  return Status(
      r == CUDA_ERROR_OUT_OF_MEMORY ? StatusCode::kResourceExhausted : StatusCode::kInternal,
      "CUDA driver " + what + ": error " + std::to_string(static_cast<int>(r)));
}

OnDevice::OnDevice(int device) {
  (void)cudaThreadExchangeStreamCaptureMode(&mode_);  // mode_ now holds the caller's mode
  if (cudaGetDevice(&previous_) != cudaSuccess) previous_ = -1;
  if (previous_ != device) status_ = cudaSetDevice(device);
}

OnDevice::~OnDevice() {
  int now = -1;
  if (previous_ >= 0 && cudaGetDevice(&now) == cudaSuccess && now != previous_) {
    (void)cudaSetDevice(previous_);
  }
  (void)cudaThreadExchangeStreamCaptureMode(&mode_);
}

Status Driver::Load() {
  auto get = [](const char* name, void** fn) -> Status {
    cudaDriverEntryPointQueryResult q{};
    cudaError_t e = cudaGetDriverEntryPointByVersion(name, fn, 12000, cudaEnableDefault, &q);
    if (e != cudaSuccess || q != cudaDriverEntryPointSuccess || *fn == nullptr) {
      return Status(StatusCode::kUnavailable,
                    std::string("CUDA driver entry point ") + name + " not available");
    }
    return Status::Ok();
  };
  SEEDANCE_RETURN_IF_ERROR(get("cuMemCreate", reinterpret_cast<void**>(&create)));
  SEEDANCE_RETURN_IF_ERROR(get("cuMemRelease", reinterpret_cast<void**>(&release)));
  SEEDANCE_RETURN_IF_ERROR(get("cuMemAddressReserve", reinterpret_cast<void**>(&reserve)));
  SEEDANCE_RETURN_IF_ERROR(get("cuMemAddressFree", reinterpret_cast<void**>(&address_free)));
  SEEDANCE_RETURN_IF_ERROR(get("cuMemMap", reinterpret_cast<void**>(&map)));
  SEEDANCE_RETURN_IF_ERROR(get("cuMemUnmap", reinterpret_cast<void**>(&unmap)));
  SEEDANCE_RETURN_IF_ERROR(get("cuMemSetAccess", reinterpret_cast<void**>(&set_access)));
  SEEDANCE_RETURN_IF_ERROR(get("cuDeviceGet", reinterpret_cast<void**>(&device_get)));
  SEEDANCE_RETURN_IF_ERROR(
      get("cuDeviceGetAttribute", reinterpret_cast<void**>(&device_attribute)));
  return get("cuMemGetAllocationGranularity", reinterpret_cast<void**>(&granularity));
}

Status Driver::CheckDevice(int device, bool posix_fd_handles) const {
  CUdevice dev = 0;
  CUresult r = device_get(&dev, device);
  if (r != CUDA_SUCCESS) return DriverError(r, "cuDeviceGet");
  int vmm = 0;
  r = device_attribute(&vmm, CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED, dev);
  if (r != CUDA_SUCCESS) return DriverError(r, "cuDeviceGetAttribute");
  if (vmm == 0) {
    return FailedPreconditionError(
        "CUDA device " + std::to_string(device) +
        " does not support virtual memory management (cuMemCreate/cuMemMap), which the device "
        "tier needs to keep addresses across moves");
  }
  if (posix_fd_handles) {
    int fd = 0;
    r = device_attribute(&fd, CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR_SUPPORTED, dev);
    if (r != CUDA_SUCCESS || fd == 0) {
      return FailedPreconditionError("CUDA device " + std::to_string(device) +
                                     " cannot export memory as POSIX file descriptors");
    }
  }
  return Status::Ok();
}

Status CheckDriverVersion() {
  int driver = 0;
  if (cudaDriverGetVersion(&driver) != cudaSuccess || driver == 0) {
    return UnavailableError("no NVIDIA driver found (libcuda.so.1 could not be loaded)");
  }
  auto version = [](int v) {
    return std::to_string(v / 1000) + "." + std::to_string(v % 1000 / 10);
  };
  // Minor version compatibility: a driver of the same major CUDA version runs these binaries.
  if (driver / 1000 < CUDART_VERSION / 1000) {
    return UnavailableError("the NVIDIA driver supports CUDA " + version(driver) +
                            " but seedance::trim was built "
                            "with CUDA " +
                            version(CUDART_VERSION) + ", which needs a driver for CUDA " +
                            std::to_string(CUDART_VERSION / 1000) +
                            ".x (CUDA 13: driver 580 or newer; CUDA 12: "
                            "525 or newer): update the driver, or build with an older toolkit "
                            "(-DCMAKE_CUDA_COMPILER=/usr/local/cuda-12.x/bin/nvcc; docs/trim.md)");
  }
  return Status::Ok();
}

CopyEngine::~CopyEngine() {
  OnDevice on(device_);
  if (legacy_done_ != nullptr) (void)cudaEventDestroy(legacy_done_);
  for (LaneState& lane : lanes_) {
    if (lane.stream != nullptr) (void)cudaStreamSynchronize(lane.stream);
    if (lane.done != nullptr) (void)cudaEventDestroy(lane.done);
    if (lane.stream != nullptr) (void)cudaStreamDestroy(lane.stream);
  }
}

Status CopyEngine::Init() {
  OnDevice on(device_);
  if (on.status() != cudaSuccess) return RuntimeError(on.status(), "cudaSetDevice");
  for (LaneState& lane : lanes_) {
    cudaError_t e = cudaStreamCreateWithFlags(&lane.stream, cudaStreamNonBlocking);
    if (e == cudaSuccess) {
      e = cudaEventCreateWithFlags(&lane.done, cudaEventBlockingSync | cudaEventDisableTiming);
    }
    if (e != cudaSuccess) return RuntimeError(e, "copy stream");
  }
  cudaError_t e =
      cudaEventCreateWithFlags(&legacy_done_, cudaEventBlockingSync | cudaEventDisableTiming);
  return e == cudaSuccess ? Status::Ok() : RuntimeError(e, "event");
}

Status CopyEngine::WaitForIssuedWork() {
  OnDevice on(device_);
  if (on.status() != cudaSuccess) return RuntimeError(on.status(), "cudaSetDevice");
  cudaError_t e;
  if (capture_safe_) {
    std::lock_guard<std::mutex> lock(legacy_mu_);
    e = cudaEventRecord(legacy_done_, cudaStreamLegacy);
    if (e == cudaSuccess) e = cudaEventSynchronize(legacy_done_);
  } else {
    e = cudaDeviceSynchronize();
  }
  if (e == cudaSuccess) return Status::Ok();
  (void)cudaGetLastError();  // a refusal during a capture is not sticky: clear it
  if (e == cudaErrorStreamCaptureUnsupported || e == cudaErrorStreamCaptureInvalidated ||
      e == cudaErrorStreamCaptureImplicit) {
    return FailedPreconditionError(
        "a CUDA graph capture is in progress on device " + std::to_string(device_) +
        ": waiting for the device before a move breaks it (the move is not made); use "
        "CudaTierOptions::capture_safe (docs/trim.md, graph capture)");
  }
  return RuntimeError(e, "wait for issued work before a move");
}

Status CopyEngine::Copy(void* dst, const void* src, uint64_t size, Lane lane, bool from_device) {
  OnDevice on(device_);
  if (on.status() != cudaSuccess) return RuntimeError(on.status(), "cudaSetDevice");
  if (from_device) SEEDANCE_RETURN_IF_ERROR(WaitForIssuedWork());
  LaneState& l = lanes_[lane];
  std::lock_guard<std::mutex> lock(l.mu);
  cudaError_t e = cudaMemcpyAsync(dst, src, size, cudaMemcpyDefault, l.stream);
  if (e == cudaSuccess) e = cudaEventRecord(l.done, l.stream);
  if (e == cudaSuccess) e = cudaEventSynchronize(l.done);
  if (e != cudaSuccess) {
    (void)cudaGetLastError();
    return RuntimeError(e, "copy");
  }
  return Status::Ok();
}

Status CopyEngine::Run(Lane lane, bool from_device,
                       const std::function<Status(cudaStream_t)>& work) {
  OnDevice on(device_);
  if (on.status() != cudaSuccess) return RuntimeError(on.status(), "cudaSetDevice");
  if (from_device) SEEDANCE_RETURN_IF_ERROR(WaitForIssuedWork());
  LaneState& l = lanes_[lane];
  std::lock_guard<std::mutex> lock(l.mu);
  Status issued = work(l.stream);
  // Waited for even after an error: nothing issued may still run when the caller goes on.
  cudaError_t e = cudaEventRecord(l.done, l.stream);
  if (e == cudaSuccess) e = cudaEventSynchronize(l.done);
  if (e != cudaSuccess) (void)cudaGetLastError();
  if (!issued.ok()) return issued;
  return e == cudaSuccess ? Status::Ok() : RuntimeError(e, "zero-block move");
}

}  // namespace seedance::trim::cuda
