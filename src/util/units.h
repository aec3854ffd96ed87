// Parsing of the typed strings used in config values: durations ("250ms", "5s", "1m") and
// sizes ("64MiB", "16 MB", "4096").
#pragma once

#include <chrono>
#include <cstdint>
#include <string_view>

#include "seedance/result.h"

namespace seedance::util {

// Accepts an integer or decimal number followed by ns, us, ms, s, m or h ("0" alone is allowed).
// Returns kInvalidArgument with the expected form otherwise.
Result<std::chrono::nanoseconds> ParseDuration(std::string_view text);

// Accepts a number followed by B, KB, MB, GB (powers of 1000), KiB, MiB, GiB (powers of 1024)
// or nothing (bytes). Returns kInvalidArgument otherwise.
Result<uint64_t> ParseSize(std::string_view text);

}  // namespace seedance::util
