// Tests only: a plain copy job for CopyWorker and MovesInFlight (no codec, `tier` both ends).
#pragma once

#include <memory>

#include "trim/copy_worker.h"

namespace seedance::trim::copy_testing {

inline std::shared_ptr<CopyWorker::Job> PlainJob(void* dst, const void* src, uint64_t size,
                                                 Tier* tier) {
  auto job = std::make_shared<CopyWorker::Job>();
  job->dst = dst;
  job->src = src;
  job->size = size;
  job->to = tier;
  job->from = tier;
  return job;
}

}  // namespace seedance::trim::copy_testing
