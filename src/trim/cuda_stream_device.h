// Weight streaming on a CUDA device (issue 41): the StreamDevice of trim/stream_executor.h over
// CUDA streams and events. Copies run on a non-blocking copy stream of its own, from pinned host
// memory; the caller's compute stream (PyTorch's current stream) waits for each copy with
// cudaStreamWaitEvent, and a copy waits the same way for the compute that last read the bytes it
// overwrites. Nothing waits on the host: no event or stream synchronization, no device
// synchronization, nothing allocated or mapped on the hot path. Event handles are reused in
// order (trim/ordered_events.h), so after warm-up none is created either.
//
// Declared here without CUDA types (and C++20 headers: nvcc compiles C++17) so the C API builds the
// same with and without nvcc; builds without CUDA answer kUnavailable (cuda_stubs.cc).
#pragma once

#include <cstddef>
#include <memory>

#include "seedance/result.h"
#include "trim/stream_device.h"

namespace seedance::trim {

// `compute_stream` is a cudaStream_t (nullptr: the legacy default stream) on `device`. The
// device's destructor waits for the copies it issued, so the ring may be freed after it.
Result<std::unique_ptr<StreamDevice>> MakeCudaStreamDevice(int device, void* compute_stream);

// Checks the memory a CUDA streamer is given: each of the `n` units' `host` bytes are pinned
// host memory (a pageable source would make every copy synchronous), `ring` and each non-null
// `resident` are memory of `device`. kInvalidArgument naming the first that is not.
Status CheckCudaStreamMemory(int device, const void* const* host, void* const* resident, size_t n,
                             const void* ring);

}  // namespace seedance::trim
