// The tail source's options (docs/tail-source.md) and their schema.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "seedance/event.h"
#include "seedance/options.h"

namespace seedance::sources {

struct TailOptions {
  std::vector<std::string> globs;
  std::string topic;  // empty: the file's path
  PayloadFormat format = PayloadFormat::kJson;
  size_t max_line = 0;
  bool from_end = true;  // for files already there at the first start
  std::chrono::nanoseconds poll_interval{0};
  bool inotify = true;
  // A file deleted or renamed out of the globs' reach is still read for this long after its
  // last growth (a writer may append through its open descriptor until it reopens the path).
  std::chrono::nanoseconds rotate_wait{0};
  int64_t max_open_files = 0;
};

const Options<TailOptions>& TailSchema();

}  // namespace seedance::sources
