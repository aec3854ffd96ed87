// The wall clock in Unix nanoseconds (event and ingest times, latency stamps).
#pragma once

#include <chrono>
#include <cstdint>

namespace seedance::util {

inline int64_t WallNowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

}  // namespace seedance::util
