// MakeCudaTiers for builds without CUDA (nvcc not found at configure time).
#include "seedance/trim.h"

namespace seedance::trim {

Result<std::vector<std::unique_ptr<Tier>>> MakeCudaTiers(const CudaTierOptions&) {
  return Status(StatusCode::kUnavailable,
                "seedance was built without CUDA (nvcc not found when configured); the CUDA "
                "tiers are not available");
}

}  // namespace seedance::trim
