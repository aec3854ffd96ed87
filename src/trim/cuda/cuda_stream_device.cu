// See trim/cuda_stream_device.h.
#include <string>
#include <vector>

#include "trim/cuda/cuda_support.h"
#include "trim/cuda_stream_device.h"
#include "trim/ordered_events.h"

namespace seedance::trim {
namespace {

using cuda::OnDevice;
using cuda::RuntimeError;

class CudaStreamDevice final : public StreamDevice {
 public:
  CudaStreamDevice(int device, cudaStream_t compute) : device_(device), compute_(compute) {}
  ~CudaStreamDevice() override {
    OnDevice on(device_);
    if (copy_ != nullptr) {
      (void)cudaStreamSynchronize(copy_);  // no copy may write the ring once it is freed
      (void)cudaStreamDestroy(copy_);
    }
    for (auto& handles : handles_) {
      for (cudaEvent_t e : handles) {
        if (e != nullptr) (void)cudaEventDestroy(e);
      }
    }
  }

  Status Init() {
    OnDevice on(device_);
    if (on.status() != cudaSuccess) return RuntimeError(on.status(), "cudaSetDevice");
    const cudaError_t e = cudaStreamCreateWithFlags(&copy_, cudaStreamNonBlocking);
    return e == cudaSuccess ? Status::Ok() : RuntimeError(e, "cudaStreamCreate (copy stream)");
  }

  Event CopyAfter(void* dst, const void* src, uint64_t bytes, Event after) override {
    OnDevice on(device_);
    if (!health_.ok()) return 0;
    WaitOn(copy_, after);
    Check(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, copy_), "copy to the ring");
    return Record(kCopy, copy_);
  }
  void ComputeWaits(Event e) override {
    OnDevice on(device_);
    if (health_.ok()) WaitOn(compute_, e);
  }
  Event RecordCompute() override {
    OnDevice on(device_);
    return health_.ok() ? Record(kCompute, compute_) : 0;
  }
  Status Health() const override { return health_; }

 private:
  // Events carry their stream in the low bit: id * 2 + stream (ids start at 1, so never 0).
  enum Stream { kCopy = 0, kCompute = 1, kStreams };

  void Check(cudaError_t e, const char* what) {
    if (e == cudaSuccess || !health_.ok()) return;
    (void)cudaGetLastError();
    static_cast<void>(health_ = RuntimeError(e, what));  // Status is [[nodiscard]]
  }
  // Whether the work before `e` is done. "Not ready" is an answer, not an error, but the runtime
  // also leaves it as the thread's last error: it is cleared, as PyTorch does, or the next
  // kernel launch checked with cudaGetLastError would fail on it.
  bool Passed(cudaEvent_t e) {
    const cudaError_t r = cudaEventQuery(e);
    if (r == cudaSuccess) return true;
    if (r == cudaErrorNotReady) {
      (void)cudaGetLastError();
    } else {
      Check(r, "cudaEventQuery");
    }
    return false;
  }
  Event Record(Stream s, cudaStream_t stream) {
    std::vector<cudaEvent_t>& handles = handles_[s];
    const OrderedEvents::Recorded r =
        events_[s].Record([&](size_t slot) { return Passed(handles[slot]); });
    if (r.new_slot) {
      cudaEvent_t e = nullptr;
      Check(cudaEventCreateWithFlags(&e, cudaEventDisableTiming), "cudaEventCreate");
      handles.push_back(e);
    }
    if (handles[r.slot] == nullptr) return 0;
    Check(cudaEventRecord(handles[r.slot], stream), "cudaEventRecord");
    return r.id * 2 + s;
  }
  void WaitOn(cudaStream_t stream, Event e) {
    if (e == 0) return;
    const auto s = static_cast<Stream>(e % 2);
    const auto slot = events_[s].Find(e / 2);
    if (!slot) return;  // passed already
    Check(cudaStreamWaitEvent(stream, handles_[s][*slot], 0), "cudaStreamWaitEvent");
  }

  int device_;
  cudaStream_t compute_;
  cudaStream_t copy_ = nullptr;
  OrderedEvents events_[kStreams];
  std::vector<cudaEvent_t> handles_[kStreams];
  Status health_ = Status::Ok();
};

std::string Which(const char* what, size_t i) {
  return std::string(what) + "[" + std::to_string(i) + "]";
}

// kInvalidArgument unless `p` is `want` memory (of `device`, for device memory).
Status CheckPointer(const void* p, cudaMemoryType want, int device, const std::string& what) {
  cudaPointerAttributes a{};
  const cudaError_t e = cudaPointerGetAttributes(&a, p);
  if (e != cudaSuccess) {
    (void)cudaGetLastError();
    return InvalidArgumentError(what + ": not memory CUDA knows (" + cudaGetErrorString(e) + ")");
  }
  if (a.type != want) {
    return InvalidArgumentError(what + (want == cudaMemoryTypeHost
                                            ? " is not pinned host memory (pin it: "
                                              "cudaHostAlloc, cudaHostRegister, "
                                              "Tensor.pin_memory())"
                                            : " is not device memory"));
  }
  if (want == cudaMemoryTypeDevice && a.device != device) {
    return InvalidArgumentError(what + " is memory of device " + std::to_string(a.device) +
                                ", not of device " + std::to_string(device));
  }
  return Status::Ok();
}

}  // namespace

Result<std::unique_ptr<StreamDevice>> MakeCudaStreamDevice(int device, void* compute_stream) {
  SEEDANCE_RETURN_IF_ERROR(cuda::CheckDriverVersion());
  auto d = std::make_unique<CudaStreamDevice>(device, static_cast<cudaStream_t>(compute_stream));
  SEEDANCE_RETURN_IF_ERROR(d->Init());
  return std::unique_ptr<StreamDevice>(std::move(d));
}

Status CheckCudaStreamMemory(int device, const void* const* host, void* const* resident, size_t n,
                             const void* ring) {
  SEEDANCE_RETURN_IF_ERROR(cuda::CheckDriverVersion());
  OnDevice on(device);
  if (on.status() != cudaSuccess) return RuntimeError(on.status(), "cudaSetDevice");
  if (ring != nullptr) {
    SEEDANCE_RETURN_IF_ERROR(CheckPointer(ring, cudaMemoryTypeDevice, device, "the ring"));
  }
  for (size_t i = 0; i < n; ++i) {
    if (host[i] != nullptr) {
      SEEDANCE_RETURN_IF_ERROR(CheckPointer(host[i], cudaMemoryTypeHost, device, Which("host", i)));
    }
  }
  for (size_t i = 0; i < n; ++i) {
    if (resident[i] != nullptr) {
      SEEDANCE_RETURN_IF_ERROR(
          CheckPointer(resident[i], cudaMemoryTypeDevice, device, Which("resident", i)));
    }
  }
  return Status::Ok();
}

}  // namespace seedance::trim
