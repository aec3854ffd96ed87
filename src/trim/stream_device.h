// StreamDevice: what weight streaming (trim/stream_executor.h) needs of a device: a copy stream
// and a compute stream with events. CUDA streams and events on a GPU
// (trim/cuda_stream_device.h), a copy thread on the host (trim/host_stream_device.h), a thread
// per stream with latches in the tests. Kept free of C++20 headers: nvcc compiles the CUDA one.
#pragma once

#include <cstdint>

#include "seedance/status.h"

namespace seedance::trim {

class StreamDevice {
 public:
  // An event passes once the work issued before it on its stream is done. 0 is no event.
  // Compute events are ordered: a later one passes after an earlier one.
  using Event = uint64_t;
  virtual ~StreamDevice() = default;
  // On the copy stream: waits for `after` (0: nothing), then copies `bytes` from host `src` to
  // device `dst`. Returns the event that passes once the copy is done. Does not wait.
  virtual Event CopyAfter(void* dst, const void* src, uint64_t bytes, Event after) = 0;
  // The compute stream waits for `e` before the work issued on it next. Does not wait.
  virtual void ComputeWaits(Event e) = 0;
  // An event on the compute stream, recorded now. Does not wait.
  virtual Event RecordCompute() = 0;
  // The first error of the calls above, which cannot return one (a CUDA call that failed);
  // sticky: the executor returns it from Begin and End from then on.
  virtual Status Health() const { return Status::Ok(); }
  // ComputeWaits calls that blocked the host until their copy was done (a host device only:
  // a GPU's compute stream waits on the device).
  virtual uint64_t host_waits() const { return 0; }
};

}  // namespace seedance::trim
