// Checks that a payload is well-formed JSON (RapidJSON's SAX reader, no DOM).
#pragma once

#include <string_view>

#include "seedance/status.h"

namespace seedance {

// OK, or kInvalidArgument "invalid JSON at offset N: <what>".
Status CheckJson(std::string_view text);

}  // namespace seedance
