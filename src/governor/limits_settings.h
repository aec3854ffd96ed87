// The `limits:` section: the resource governor's memory budget, declared here, next to the
// governor. memory == 0: no budget. The triggers are the trimming policy's (one definition, in
// the trim library's public API); the fragmentation trigger does not apply here: batches are
// not placed in an arena.
#pragma once

#include <chrono>
#include <cstdint>

#include "seedance/options.h"
#include "seedance/trim.h"

namespace seedance::governor {

struct LimitsSettings {
  uint64_t memory = 0;
  std::chrono::nanoseconds step = std::chrono::milliseconds(100);
  trim::PolicyOptions policy = {.min_victim_bytes = 0};
};

const Options<LimitsSettings>& LimitsSchema();

}  // namespace seedance::governor
