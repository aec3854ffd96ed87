#include "sources/gpu/gpu_backend.h"

namespace seedance::sources::gpu {

Result<std::unique_ptr<GpuBackend>> OpenBackend(const BackendSettings& settings) {
  std::vector<std::string> reasons;
  for (std::string_view kind : {"nvml", "jetson"}) {
    if (settings.backend != "auto" && settings.backend != kind) continue;
    std::unique_ptr<GpuBackend> b =
        kind == "nvml" ? MakeNvmlBackend(settings) : MakeJetsonBackend(settings);
    Status st = b->Open();
    if (st.ok()) return b;
    // A device the config names that is not there is the config's error, not a missing GPU.
    if (st.code() == StatusCode::kInvalidArgument) return st;
    reasons.push_back(std::string(kind) + ": " + st.message());
  }
  std::string why;
  for (const std::string& r : reasons) why += (why.empty() ? "" : "; ") + r;
  return NotFoundError(why);
}

}  // namespace seedance::sources::gpu
