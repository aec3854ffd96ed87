// Tests only: the byte unit the trim tests size their units in, defined once (a unity build
// compiles several test files as one source, where a second definition is an error).
#pragma once

#include <cstdint>

namespace seedance::trim {

inline constexpr uint64_t kKiB = 1024;

}  // namespace seedance::trim
