// The `tail` source: lines appended to local files (globs), NDJSON or raw, followed across
// rotation (rename and copy-truncate), with positions kept in the data directory once the
// lines are stored. docs/tail-source.md.
#pragma once

#include "seedance/plugin_registry.h"

namespace seedance::sources {

SourceFactory TailSourceFactory();

}  // namespace seedance::sources
