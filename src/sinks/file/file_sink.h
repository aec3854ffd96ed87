// The `file` sink: appends events as NDJSON lines to a file, rotating it by size.
//
// Rotation: when the file would exceed `max_size`, it is renamed to <path>.1 (older ones shift
// to .2 …, keeping `max_files`) and a new file is started. Each batch is written with one
// write(2); `fsync: true` syncs after each batch.
#pragma once

#include "seedance/plugin_registry.h"

namespace seedance::sinks {

SinkFactory FileSinkFactory();

}  // namespace seedance::sinks
