// MakeCudaTiers for builds without CUDA (nvcc not found at configure time).
#include "seedance/trim.h"

namespace seedance::trim {

Result<std::vector<std::unique_ptr<Tier>>> MakeCudaTiers(const CudaTierOptions& o) {
  // Bad options are refused first, as in the CUDA build (a caller's mistake is the same error).
  if (o.device_budget == 0 || o.pinned_capacity == 0) {
    return InvalidArgumentError("device_budget and pinned_capacity must be set");
  }
  return Status(StatusCode::kUnavailable,
                "seedance was built without CUDA (nvcc not found when configured); the CUDA "
                "tiers are not available");
}

}  // namespace seedance::trim
