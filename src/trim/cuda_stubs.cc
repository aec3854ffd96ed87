// The CUDA parts for builds without CUDA (nvcc not found at configure time): MakeCudaTiers and
// the CUDA streamer answer kUnavailable, after refusing bad options as the CUDA build does.
#include "seedance/trim.h"
#include "trim/cuda_stream_device.h"

namespace seedance::trim {
namespace {

Status NoCuda(const char* what) {
  return Status(StatusCode::kUnavailable,
                std::string("seedance was built without CUDA (nvcc not found when configured); ") +
                    what + " not available");
}

}  // namespace

Result<std::vector<std::unique_ptr<Tier>>> MakeCudaTiers(const CudaTierOptions& o) {
  // Bad options are refused first, as in the CUDA build (a caller's mistake is the same error).
  if (o.device_budget == 0 || o.pinned_capacity == 0) {
    return InvalidArgumentError("device_budget and pinned_capacity must be set");
  }
  return NoCuda("the CUDA tiers are");
}

Result<std::unique_ptr<StreamDevice>> MakeCudaStreamDevice(int, void*) {
  return NoCuda("the CUDA streamer is");
}

Status CheckCudaStreamMemory(int, const void* const*, void* const*, size_t, const void*) {
  return NoCuda("the CUDA streamer is");
}

}  // namespace seedance::trim
