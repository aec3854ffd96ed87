// The `queue:` section: the durable queue between processors and sinks, declared here, next
// to the queue that uses it.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

#include "seedance/options.h"

namespace seedance::storage {

struct QueueSettings {
  bool durable = true;  // buffer: disk (default) or memory
  std::string data_dir = "seedance-data";
  uint64_t segment_bytes = 64ull << 20;
  uint64_t max_disk = 1ull << 30;
  bool drop_oldest = false;  // when_full: block (default) or drop_oldest
  enum class Fsync { kAlways, kInterval, kNever };
  struct FsyncPolicy {
    Fsync mode = Fsync::kInterval;
    std::chrono::nanoseconds interval = std::chrono::milliseconds(100);  // for kInterval
  } fsync;
};

const Options<QueueSettings>& QueueSchema();

}  // namespace seedance::storage
